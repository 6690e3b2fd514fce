"""F.grid_sample and F.affine_grid, composed of rill's ops: each output point reads the input at the
coordinates its grid entry gives ((x, y) or (x, y, z) in [-1, 1]), interpolated from the neighbouring
elements gathered from the flattened input; out-of-range coordinates follow padding_mode. Gradients reach
the input through the gathers and the grid through the interpolation weights."""
import itertools

import rill

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> input index space (-1 and 1 the corner elements' centres, or the corners themselves)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, low2, high2):
    """coord reflected into [low2 / 2, high2 / 2] (the bounds given doubled, as they may be half-integers)."""
    if low2 == high2:
        return rill.zeros_like(coord)
    low, span = low2 / 2, (high2 - low2) / 2
    coord = (coord - low).abs()
    flips = rill.floor(coord / span)
    extra = coord - flips * span
    even = rill.remainder(flips, 2) == 0
    return rill.where(even, extra + low, span - extra + low)


def _pad_coordinate(coord, size, padding, align_corners):
    """The coordinate under border or reflection padding (unchanged for zeros)."""
    if padding == 2:
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    if padding in (1, 2):
        coord = coord.clamp(0, size - 1)
    return coord


def _gather(flat, indices, valid, sizes):
    """flat (N, C, prod(sizes)) read at the integer coordinates indices (each (N, *out)), 0 where not valid."""
    n, c = flat.shape[0], flat.shape[1]
    out_shape = tuple(indices[0].shape[1:])
    linear = rill.zeros_like(indices[0])
    for idx, size in zip(indices, sizes):
        linear = linear * size + idx.clamp(0, size - 1)
    values = flat.gather(2, linear.reshape(n, 1, -1).expand(n, c, linear[0].numel()))
    values = values.reshape(n, c, *out_shape)
    return rill.where(valid.unsqueeze(1), values, rill.zeros((), dtype=flat.dtype))


def _in_bounds(indices, sizes):
    valid = None
    for idx, size in zip(indices, sizes):
        ok = (idx >= 0) & (idx < size)
        valid = ok if valid is None else valid & ok
    return valid


def _cubic_weights(t):
    """The four cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for the fraction t."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _sample(input, grid, mode, padding, align_corners):
    nd = input.dim() - 2
    sizes = tuple(input.shape[2:])
    n, c = input.shape[0], input.shape[1]
    flat = input.reshape(n, c, -1)
    # grid's last dim lists (x, y[, z]): x indexes the last input dim
    coords = [_unnormalize(grid[..., nd - 1 - d], sizes[d], align_corners) for d in range(nd)]
    if mode == 2:
        return _bicubic(flat, coords, sizes, padding, align_corners)
    coords = [_pad_coordinate(x, s, padding, align_corners) for x, s in zip(coords, sizes)]
    if mode == 1:
        idx = [rill.round(x).to(rill.int64) for x in coords]
        return _gather(flat, idx, _in_bounds(idx, sizes), sizes)
    lows = [rill.floor(x) for x in coords]
    fracs = [x - lo for x, lo in zip(coords, lows)]
    lows = [lo.to(rill.int64) for lo in lows]
    out = None
    for corner in itertools.product((0, 1), repeat=nd):
        idx = [lo + k for lo, k in zip(lows, corner)]
        weight = None
        for f, k in zip(fracs, corner):
            w = f if k else 1 - f
            weight = w if weight is None else weight * w
        term = _gather(flat, idx, _in_bounds(idx, sizes), sizes) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _bicubic(flat, coords, sizes, padding, align_corners):
    (iy, ix), (h, w) = coords, sizes
    y0, x0 = rill.floor(iy), rill.floor(ix)
    wy, wx = _cubic_weights(iy - y0), _cubic_weights(ix - x0)
    y0, x0 = y0.to(rill.int64), x0.to(rill.int64)
    out = None
    for i in range(4):
        for j in range(4):
            # each tap's coordinate is padded on its own; with zeros, taps outside read 0
            ty = _pad_coordinate((y0 + (i - 1)).to(flat.dtype), h, padding, align_corners).to(rill.int64)
            tx = _pad_coordinate((x0 + (j - 1)).to(flat.dtype), w, padding, align_corners).to(rill.int64)
            term = _gather(flat, [ty, tx], _in_bounds([ty, tx], sizes), sizes) * (wy[i] * wx[j]).unsqueeze(1)
            out = term if out is None else out + term
    return out


def _check(input, grid, mode, name):
    if input.dim() not in (4, 5):
        raise ValueError(f"{name}: input must be (N, C, H, W) or (N, C, D, H, W), got {tuple(input.shape)}")
    nd = input.dim() - 2
    if grid.dim() != input.dim() or grid.shape[0] != input.shape[0] or grid.shape[-1] != nd:
        raise ValueError(f"{name}: grid must be (N, *out, {nd}) with input's batch size {input.shape[0]}, got "
                         f"{tuple(grid.shape)}")
    if not input.is_floating_point() or grid.dtype != input.dtype:
        raise TypeError(f"{name}: input and grid must be floating point of one dtype, got {input.dtype} and "
                        f"{grid.dtype}")
    if mode == 2 and nd != 2:
        raise ValueError(f"{name}: bicubic interpolation needs a 4-D input")
    if any(s == 0 for s in input.shape[2:]):
        raise ValueError(f"{name}: input's spatial sizes must be non-zero, got {tuple(input.shape)}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) or (N, C, D, H, W) sampled at grid (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3);
    mode bilinear (trilinear in 3-D), nearest or bicubic; padding_mode zeros, border or reflection."""
    if mode not in _MODES:
        raise ValueError(f"grid_sample: mode must be one of {tuple(_MODES)}, got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {tuple(_PADDINGS)}, got {padding_mode!r}")
    _check(input, grid, _MODES[mode], "grid_sample")
    return _sample(input, grid, _MODES[mode], _PADDINGS[padding_mode], bool(align_corners))


def _grid_sampler(name, nd):
    def sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        if input.dim() != nd + 2:
            raise ValueError(f"{name}: input must have {nd + 2} dimensions, got {input.dim()}")
        if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
            raise ValueError(f"{name}: interpolation_mode and padding_mode must be 0, 1 or 2")
        _check(input, grid, interpolation_mode, name)
        return _sample(input, grid, interpolation_mode, padding_mode, bool(align_corners))
    sampler.__name__ = name
    sampler.__doc__ = f"aten's {name}: grid_sample with the modes as integers (bilinear 0, nearest 1, bicubic 2; " \
                      "zeros 0, border 1, reflection 2)."
    return sampler


grid_sampler_2d = _grid_sampler("grid_sampler_2d", 2)
grid_sampler_3d = _grid_sampler("grid_sampler_3d", 3)


def _base(size, align_corners, dtype):
    if size == 1:
        return rill.zeros(1, dtype=dtype)
    steps = rill.linspace(-1, 1, size, dtype=dtype)
    return steps if align_corners else steps * ((size - 1) / size)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps theta (N, 2, 3) or (N, 3, 4)
    applied to the output's normalized coordinates."""
    size = tuple(size)
    if not isinstance(theta, rill.Tensor) or not theta.is_floating_point():
        raise TypeError("affine_grid: theta must be a floating point tensor")
    nd = len(size) - 2
    if nd not in (2, 3) or theta.dim() != 3 or tuple(theta.shape[1:]) != (nd, nd + 1) or theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta must be (N, 2, 3) for a 4-D size or (N, 3, 4) for a 5-D one, with N = "
                         f"size[0]; got theta {tuple(theta.shape)} and size {size}")
    if min(size) <= 0:
        raise ValueError(f"affine_grid: size must be positive, got {size}")
    ac = bool(align_corners)
    spatial = size[2:]
    # base[..., :] = (x, y[, z], 1) over the output grid, x along the last dim
    axes = [_base(s, ac, theta.dtype) for s in spatial]
    mesh = rill.meshgrid(*axes, indexing="ij")
    columns = [mesh[nd - 1 - d] for d in range(nd)] + [rill.ones(spatial, dtype=theta.dtype)]
    base = rill.stack(columns, -1).reshape(1, -1, nd + 1)
    grid = base.matmul(theta.mT)  # (N, prod(spatial), nd)
    return grid.reshape(size[0], *spatial, nd)
