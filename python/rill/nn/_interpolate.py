"""rill.nn.functional.interpolate: resizing as one interpolation matrix per spatial dim (PyTorch's source-index
rules for each mode), so the gradient is the matrices' transpose."""
import math

import numpy as np

import rill


def _cubic_weights(t, a=-0.75):
    """The four weights of Keys' cubic convolution (PyTorch's a = -0.75) for taps at -1, 0, 1, 2 from floor(src)."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _interp_matrix(out_size, in_size, scale, mode, align_corners):
    """(out_size, in_size) float64 matrix: row i holds the weights output position i gives each input (PyTorch's
    source-index rules: scale is 1 / scale_factor when the caller's factor is used, else in_size / out_size)."""
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    ratio = (in_size / out_size) if scale is None else 1.0 / scale
    if mode in ("nearest", "nearest-exact"):
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((rows + offset) * ratio).astype(np.int64), in_size - 1)
        m[rows, src] = 1.0
        return m
    if mode == "area":  # adaptive average pooling: [floor(i * in / out), ceil((i + 1) * in / out))
        for i in range(out_size):
            lo, hi = (i * in_size) // out_size, -((-(i + 1) * in_size) // out_size)
            m[i, lo:hi] = 1.0 / (hi - lo)
        return m
    if align_corners:
        src = rows * ((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0)
    else:
        src = (rows + 0.5) * ratio - 0.5
    if mode == "bicubic":
        base = np.floor(src).astype(np.int64)
        for offset, w in zip((-1, 0, 1, 2), _cubic_weights(src - base)):
            np.add.at(m, (rows, np.clip(base + offset, 0, in_size - 1)), w)
        return m
    src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    l1 = src - i0
    np.add.at(m, (rows, i0), 1.0 - l1)
    np.add.at(m, (rows, i1), l1)
    return m


def _aa_filter(mode):
    if mode == "bilinear":
        return lambda x: np.maximum(1.0 - np.abs(x), 0.0)
    a = -0.5  # PyTorch's antialiased bicubic uses Keys' a = -0.5

    def cubic(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return cubic


def _aa_matrix(out_size, in_size, scale, mode, align_corners):
    """(out_size, in_size) antialiased weights: the filter stretched by the downscaling ratio (a low-pass
    filter), its taps normalized to sum to 1 (PyTorch's separable antialias kernels)."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = (in_size / out_size) if scale is None or scale <= 0 else 1.0 / scale
    half = 1.0 if mode == "bilinear" else 2.0
    support = half * ratio if ratio >= 1.0 else half
    invscale = 1.0 / ratio if ratio >= 1.0 else 1.0
    filt = _aa_filter(mode)
    m = np.zeros((out_size, in_size))
    for i in range(out_size):
        center = ratio * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        w = filt((np.arange(lo, hi) - center + 0.5) * invscale)
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0 else w
    return m


def _uint8_weights(out_size, in_size, scale, mode, align_corners, antialias):
    """(out_size, in_size) int16-valued weights and their fixed-point shift for PyTorch's uint8 bilinear/bicubic
    CPU kernels (Pillow's scheme). The taps are the antialias kernel's window (without antialias: the filter
    unstretched, centred half a pixel off with align_corners), normalised to sum to 1, except non-antialiased
    bicubic, which replicates the border as the float kernel does; then scaled by 2 ** shift, the largest
    shift (at most 22) keeping twice the largest weight below 2 ** 15, and rounded half away from zero."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    m = np.zeros((out_size, in_size))
    if mode == "bicubic" and not antialias:
        rows = np.arange(out_size)
        src = rows * ratio if align_corners else (rows + 0.5) * ratio - 0.5
        base = np.floor(src).astype(np.int64)
        for offset, w in zip((-1, 0, 1, 2), _cubic_weights(src - base)):
            np.add.at(m, (rows, np.clip(base + offset, 0, in_size - 1)), w)
    else:
        stretch = antialias and ratio >= 1.0
        half = 1.0 if mode == "bilinear" else 2.0
        support, invscale = (half * ratio, 1.0 / ratio) if stretch else (half, 1.0)
        delta = 0.5 if align_corners and not antialias else 0.0
        filt = _aa_filter(mode)
        for i in range(out_size):
            center = ratio * (i + 0.5 - delta)
            lo = max(int(center - support + 0.5 + delta), 0)
            hi = min(int(center + support + 0.5 + delta), in_size)
            w = filt((np.arange(lo, hi) - center + 0.5 - delta) * invscale)
            total = w.sum()
            m[i, lo:hi] = w / total if total != 0 else w
    largest = m.max() if m.size else 0.0
    shift = 0
    while shift < 22 and int(0.5 + largest * (1 << (shift + 1))) < (1 << 15):
        shift += 1
    scaled = m * (1 << shift)
    return np.trunc(scaled + np.where(scaled < 0, -0.5, 0.5)), shift


def _resize_uint8(input, sizes, scales, mode, align_corners, antialias):
    """uint8 bilinear/bicubic resize as PyTorch's CPU kernels compute it: in fixed point (_uint8_weights), the
    width pass first and then the height pass, each skipped when its size is unchanged, each sum rounded
    (half up) by the shift and saturated to [0, 255]. Exact: the integer sums stay far below 2 ** 53."""
    x = input.double()
    for d in (1, 0):
        if sizes[d] == input.shape[2 + d]:
            continue
        weights, shift = _uint8_weights(sizes[d], input.shape[2 + d], scales[d], mode, align_corners, antialias)
        x = (x.movedim(d + 2, -1) @ rill.tensor(weights.T)).movedim(-1, d + 2)
        x = rill.clamp(rill.floor((x + (1 << shift >> 1)) / (1 << shift)), 0, 255)
    return x.to(rill.uint8).contiguous()


_INTERPOLATE_MODES = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,),
                      "bilinear": (2,), "bicubic": (2,), "trilinear": (3,)}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of a 3-D (N, C, W), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input: mode 'nearest',
    'nearest-exact' or 'area' for any of them, 'linear' (3-D), 'bilinear' or 'bicubic' (4-D, antialiased with
    antialias=True), 'trilinear' (5-D), to size or by scale_factor. Computed as products with one interpolation matrix per spatial dim, so
    the gradient is their transpose; integer inputs are computed in float64 and rounded as PyTorch does (uint8
    bilinear/bicubic: in PyTorch's fixed point, _resize_uint8)."""
    spatial = input.ndim - 2
    if mode not in _INTERPOLATE_MODES:
        raise NotImplementedError(f"Input Error: got mode '{mode}'; expected one of {', '.join(_INTERPOLATE_MODES)}")
    if spatial not in _INTERPOLATE_MODES[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{' or '.join(str(d + 2) + 'D' for d in _INTERPOLATE_MODES[mode])} input")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"[interpolate] antialias=True needs mode 'bilinear' or 'bicubic' on a 4-D input, got "
                         f"mode '{mode}'")
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear "
                         "| bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        sizes = [size] * spatial if isinstance(size, int) else list(size)
        if len(sizes) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {in_sizes} and output size of {sizes}.")
        scales = [None] * spatial
    else:
        scales = [scale_factor] * spatial if isinstance(scale_factor, (int, float)) else list(scale_factor)
        if len(scales) != spatial:
            raise ValueError("Input and scale_factor must have the same number of spatial dimensions")
        sizes = [int(math.floor(n * s)) for n, s in zip(in_sizes, scales)]
        if recompute_scale_factor or mode == "area":
            scales = [None] * spatial
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"[interpolate] output sizes should be greater than 0, got {sizes}")
    if input.dtype == rill.uint8 and mode in ("bilinear", "bicubic"):
        return _resize_uint8(input, sizes, [None] * 2 if align_corners else scales, mode, bool(align_corners),
                             antialias)
    integer = not input.dtype.is_floating_point
    # integers in float64, 16-bit floats in float32: one rounding at the end, as PyTorch's kernels
    x = input.double() if integer else input.float() if input.dtype in (rill.float16, rill.bfloat16) else input
    info = np.iinfo(str(input.dtype).split(".")[-1]) if integer else None
    # last dim first; integers are rounded half up and saturated after each pass, as PyTorch's separable kernels
    for d in reversed(range(spatial)):
        build = _aa_matrix if antialias else _interp_matrix
        mat = rill.tensor(build(sizes[d], in_sizes[d], scales[d], mode, bool(align_corners)).T).to(x.dtype)
        x = (x.movedim(d + 2, -1) @ mat).movedim(-1, d + 2)
        if integer:
            x = rill.clamp(rill.floor(x + 0.5), info.min, info.max)
    return x.to(input.dtype).contiguous()


def _upsample_bilinear2d_aa(input, output_size=None, align_corners=False, scale_factors=None, scales_h=None,
                            scales_w=None):
    """aten's antialiased bilinear resize of an (N, C, H, W) input to output_size, or by scale_factors
    ([h, w]; scales_h/scales_w give the scales that go with an output_size)."""
    if input.dim() != 4:
        raise ValueError(f"_upsample_bilinear2d_aa: input must be (N, C, H, W), got {tuple(input.shape)}")
    if output_size is None:
        if scale_factors is None:
            raise ValueError("_upsample_bilinear2d_aa: give output_size or scale_factors")
        return interpolate(input, scale_factor=list(scale_factors), mode="bilinear", align_corners=align_corners,
                           antialias=True)
    scales = [scales_h, scales_w] if scale_factors is None else list(scale_factors)
    if scales == [None, None]:
        return interpolate(input, size=list(output_size), mode="bilinear", align_corners=align_corners,
                           antialias=True)
    if input.dtype == rill.uint8:
        return _resize_uint8(input, [int(n) for n in output_size], scales, "bilinear", bool(align_corners), True)
    integer = not input.dtype.is_floating_point
    x = input.double() if integer else input.float() if input.dtype in (rill.float16, rill.bfloat16) else input
    info = np.iinfo(str(input.dtype).split(".")[-1]) if integer else None
    for d in (1, 0):
        mat = rill.tensor(_aa_matrix(int(output_size[d]), input.shape[2 + d], scales[d], "bilinear",
                                     bool(align_corners)).T).to(x.dtype)
        x = (x.movedim(d + 2, -1) @ mat).movedim(-1, d + 2)
        if integer:
            x = rill.clamp(rill.floor(x + 0.5), info.min, info.max)
    return x.to(input.dtype).contiguous()
