"""3-D pooling and adaptive max pooling, composed from differentiable ops (their gradients come with them).

Average pooling over a box is separable: the window sum along each spatial dim is a product with a (output,
input) 0/1 matrix, and PyTorch's divisor (the window clipped to the padded input, the part inside the input
with count_include_pad=False, or divisor_override) is a product of per-dim counts too. So avg_pool3d and
adaptive_avg_pool3d are one matmul per dim, with the divisor folded into the matrices.

Max pooling gathers each window: index_select along each spatial dim with the window's positions (output
position o, window slot k), then a max over the flattened window, whose argmax, decoded back into positions,
gives the indices (flat over the input's spatial dims, as PyTorch's). Padding reads a fill below every value;
an adaptive window shorter than the longest repeats its last position (which leaves the max and the first
argmax unchanged)."""
import math

import numpy as np

import rill

_FLOAT16 = (rill.float16, rill.bfloat16)
_INT_MIN = {rill.uint8: 0, rill.int8: -2 ** 7, rill.int16: -2 ** 15, rill.int32: -2 ** 31, rill.int64: -2 ** 63}


def _tuple(v, n, name, op):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"[{op}] {name} must either be a single int, or a tuple of {n} ints")
    return v


def _batched(input, n, op):
    """input (N, C, *spatial) or (C, *spatial) as (B, *spatial), and the leading shape to restore."""
    if not isinstance(input, rill.Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"[{op}] Expected {n + 1}D or {n + 2}D (batch mode) tensor for input, but got input of "
                           f"size {list(input.shape)}")
    lead = tuple(input.shape[:-n])
    spatial = tuple(input.shape[-n:])
    if any(v == 0 for v in tuple(input.shape[-n - 1:])):
        raise RuntimeError(f"[{op}] Expected input's non-batch dimensions to have positive length, but input has "
                           f"a shape of {list(input.shape)}")
    return input.reshape((math.prod(lead),) + spatial), lead


def _pool_out_size(size, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _window_args(op, n, kernel_size, stride, padding, dilation, ceil_mode, spatial):
    k = _tuple(kernel_size, n, "kernel_size", op)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, n, "stride", op)
    p = _tuple(padding, n, "padding", op)
    d = _tuple(dilation, n, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"[{op}] kernel_size should be greater than zero, but got kernel_size={list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"[{op}] stride should be greater than zero, but got stride={list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"[{op}] dilation should be greater than zero, but got dilation={list(d)}")
    if any(p[j] < 0 or p[j] > (d[j] * (k[j] - 1) + 1) // 2 for j in range(n)):
        raise RuntimeError(f"[{op}] pad should be at most half of effective kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)} and dilation={list(d)}")
    out = tuple(_pool_out_size(spatial[j], k[j], s[j], p[j], d[j], ceil_mode) for j in range(n))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"[{op}] Given input size {list(spatial)}, calculated output size {list(out)} is too "
                           f"small; use a smaller kernel or more padding")
    return k, s, p, d, out


def _gather_windows(x, positions):
    """x (B, *spatial) and per-dim int arrays (O_j, K_j) of positions -> (B, *O, prod K) windows."""
    n = len(positions)
    for j, pos in enumerate(positions):
        x = x.index_select(1 + 2 * j, rill.tensor(pos.reshape(-1), dtype=rill.int64))
        x = x.reshape(tuple(x.shape[:1 + 2 * j]) + pos.shape + tuple(x.shape[2 + 2 * j:]))
    b = x.shape[0]
    x = x.permute(0, *[1 + 2 * j for j in range(n)], *[2 + 2 * j for j in range(n)])
    outs = tuple(p.shape[0] for p in positions)
    return x.reshape((b,) + outs + (math.prod(p.shape[1] for p in positions),))


def _window_max(x, positions, offsets, spatial, lead, return_indices):
    """Max over the gathered windows; indices flat over the unpadded spatial dims (position - offset)."""
    n = len(positions)
    values, arg = _gather_windows(x, positions).max(-1)
    out_shape = lead + tuple(values.shape[1:])
    values = values.reshape(out_shape)
    if not return_indices:
        return values
    ks = [p.shape[1] for p in positions]
    flat = None
    rest = arg
    for j in reversed(range(n)):
        a_j = rest % ks[j] if j else rest
        rest = rest // ks[j]
        o = positions[j].shape[0]
        shape = [1] * (n + 1)
        shape[1 + j] = o
        o_grid = rill.arange(o, dtype=rill.int64).reshape(shape)
        pos = rill.tensor((positions[j] - offsets[j]).reshape(-1), dtype=rill.int64)[o_grid * ks[j] + a_j]
        stride = math.prod(spatial[j + 1:])
        flat = pos * stride if flat is None else flat + pos * stride
    return values, flat.reshape(out_shape)


def _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, lead = _batched(input, n, op)
    spatial = tuple(x.shape[1:])
    k, s, p, d, out = _window_args(op, n, kernel_size, stride, padding, dilation, ceil_mode, spatial)
    if input.dtype == rill.bool:
        raise RuntimeError(f"[{op}] \"max_pool{n}d\" not implemented for 'Bool'")
    fill = _INT_MIN[input.dtype] if input.dtype in _INT_MIN else float("-inf")
    pads = []
    positions = []
    for j in range(n):
        right = (out[j] - 1) * s[j] + d[j] * (k[j] - 1) + 1 - spatial[j] - p[j]
        pads.append((p[j], max(right, 0)))
        positions.append(np.arange(out[j])[:, None] * s[j] + np.arange(k[j])[None, :] * d[j])
    flat_pad = []
    for lo, hi in reversed(pads):
        flat_pad += [lo, hi]
    if any(flat_pad):
        x = rill.nn.functional.pad(x, flat_pad, value=fill)
    return _window_max(x, positions, [lo for lo, _ in pads], spatial, lead, return_indices)


def max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """n-D max pooling by gathered windows (rill.nn.functional runs integer 2-D pooling here)."""
    return _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling of (N, C, D, H, W) or (C, D, H, W); stride defaults to kernel_size. With return_indices,
    also the int64 flat index of each maximum within its D * H * W volume."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _adaptive_bounds(size, out):
    starts = [(o * size) // out for o in range(out)]
    ends = [-(-((o + 1) * size) // out) for o in range(out)]
    return starts, ends


def _adaptive_sizes(op, n, output_size, spatial):
    if isinstance(output_size, int):
        sizes = (output_size,) * n
    else:
        sizes = tuple(output_size)
        if len(sizes) == 1 and n > 1:
            sizes = sizes * n
        if len(sizes) != n:
            raise RuntimeError(f"[{op}] output_size must be an int or {n} values, got {list(sizes)}")
    sizes = tuple(spatial[j] if sizes[j] is None else int(sizes[j]) for j in range(n))
    if any(o <= 0 for o in sizes):
        raise RuntimeError(f"[{op}] elements of output_size must be greater than zero, got {list(sizes)}")
    return sizes


def _adaptive_max(op, n, input, output_size, return_indices):
    x, lead = _batched(input, n, op)
    spatial = tuple(x.shape[1:])
    sizes = _adaptive_sizes(op, n, output_size, spatial)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"[{op}] \"adaptive_max_pool{n}d\" not implemented for '{input.dtype.name}'; convert "
                           f"the input with .float()")
    positions = []
    for j in range(n):
        starts, ends = _adaptive_bounds(spatial[j], sizes[j])
        k = max(e - b for b, e in zip(starts, ends))
        positions.append(np.array([[min(b + i, e - 1) for i in range(k)] for b, e in zip(starts, ends)]))
    return _window_max(x, positions, [0] * n, spatial, lead, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-D max pooling to output_size, over PyTorch's adaptive windows [floor(o L / O), ceil((o + 1) L / O))."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-D max pooling to output_size (an int or 2 values; None keeps that size)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D max pooling to output_size (an int or 3 values; None keeps that size)."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def _apply_matrices(x, mats):
    """x (B, *spatial) with mats[j] (O_j, L_j) applied along spatial dim j."""
    for j, m in enumerate(mats):
        x = (x.movedim(1 + j, -1) @ rill.tensor(m.T, dtype=x.dtype)).movedim(-1, 1 + j)
    return x


def _window_sums(x, k, s, p, out):
    """x (B, *spatial) summed over the out[j] windows of size k[j], stride s[j] and zero padding p[j] along each
    spatial dim j: k[j] strided slices added per dim, so a NaN or inf reaches only the windows holding it (a
    window-sum matrix would spread it through its zeros)."""
    for j in range(len(k)):
        dim, size = 1 + j, x.shape[1 + j]
        span = (out[j] - 1) * s[j] + k[j]  # the padded extent the windows cover
        right = span - p[j] - size
        if right < 0:
            x = x.narrow(dim, 0, size + right)
        pads = [rill.zeros(tuple(x.shape[:dim]) + (w,) + tuple(x.shape[dim + 1:]), dtype=x.dtype)
                for w in (p[j], max(right, 0))]
        x = rill.cat([pads[0], x, pads[1]], dim) if p[j] or right > 0 else x
        lead = (slice(None),) * dim
        total = None
        for i in range(k[j]):
            part = x[lead + (slice(i, i + (out[j] - 1) * s[j] + 1, s[j]),)]
            total = part if total is None else total + part
        x = total
    return x


def _float_compute(input):
    if input.dtype in _FLOAT16:
        return rill.float32
    if input.dtype.is_floating_point:
        return input.dtype
    return rill.float64


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling of (N, C, D, H, W) or (C, D, H, W); stride defaults to kernel_size. Integer inputs
    give the window sum divided by the divisor, truncated, as PyTorch's."""
    return avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override)


def avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """n-D average pooling by per-dim window sums (rill.nn.functional runs integer 1-D/2-D pooling here; floating
    1-D/2-D pooling has its own op)."""
    x, lead = _batched(input, n, op)
    if input.dtype == rill.bool:
        raise RuntimeError(f"[{op}] \"{op}\" not implemented for 'Bool'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"[{op}] divisor must be not zero; pass divisor_override=None to divide by the window "
                           f"size")
    spatial = tuple(x.shape[1:])
    k, s, p, _, out = _window_args(op, n, kernel_size, stride, padding, 1, ceil_mode, spatial)
    integer = not input.dtype.is_floating_point
    counts = []
    for j in range(n):
        c = np.zeros(out[j])
        for o in range(out[j]):
            start = o * s[j] - p[j]
            end = min(start + k[j], spatial[j] + p[j])
            lo, hi = max(start, 0), min(end, spatial[j])
            c[o] = (end - start) if count_include_pad else max(hi - lo, 1)
        counts.append(c)
    y = _window_sums(x.to(_float_compute(input)), k, s, p, out)
    if divisor_override is not None:
        div = float(divisor_override)
    else:
        div = counts[0]
        for c in counts[1:]:
            div = np.multiply.outer(div, c)
        div = rill.tensor(div, dtype=y.dtype)
    y = y / div
    if integer:
        y = rill.trunc(y)
    return y.to(input.dtype).reshape(lead + out)


def adaptive_avg_pool3d(input, output_size):
    """3-D average pooling to output_size (an int or 3 values; None keeps that size)."""
    op, n = "adaptive_avg_pool3d", 3
    x, lead = _batched(input, n, op)
    spatial = tuple(x.shape[1:])
    sizes = _adaptive_sizes(op, n, output_size, spatial)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"[{op}] \"adaptive_avg_pool3d\" not implemented for '{input.dtype.name}'; convert the "
                           f"input with .float()")
    if input.dtype in _FLOAT16 and sizes != (1, 1, 1):  # PyTorch's global pooling is a mean (float32 sums)
        return _adaptive_avg_16bit(x, sizes, spatial).reshape(lead + sizes)
    mats = []
    for j in range(n):
        starts, ends = _adaptive_bounds(spatial[j], sizes[j])
        m = np.zeros((sizes[j], spatial[j]))
        for o, (b, e) in enumerate(zip(starts, ends)):
            m[o, b:e] = 1.0 / (e - b)
        mats.append(m)
    y = _apply_matrices(x.to(_float_compute(input)), mats)
    return y.to(input.dtype).reshape(lead + sizes)


def _adaptive_avg_16bit(x, sizes, spatial):
    """adaptive_avg_pool3d in a 16-bit dtype as PyTorch's CPU kernel computes it: each window summed in the
    dtype in scan order (every addition rounded), then divided by its depth, height and width in turn."""
    positions, masks, counts = [], [], []
    for j in range(3):
        starts, ends = _adaptive_bounds(spatial[j], sizes[j])
        k = max(e - b for b, e in zip(starts, ends))
        positions.append(np.array([[min(b + i, e - 1) for i in range(k)] for b, e in zip(starts, ends)]))
        masks.append(np.array([[b + i < e for i in range(k)] for b, e in zip(starts, ends)]))
        counts.append(np.array([e - b for b, e in zip(starts, ends)], dtype=np.float64))
    windows = _gather_windows(x, positions)  # (B, Od, Oh, Ow, Kd * Kh * Kw)
    mask = np.einsum("ai,bj,ck->abcijk", *masks).reshape(sizes + (windows.shape[-1],))
    total = rill.zeros(tuple(windows.shape[:-1]), dtype=x.dtype)
    for i in range(windows.shape[-1]):
        term = windows[..., i]
        if not mask[..., i].all():
            term = rill.where(rill.tensor(mask[..., i]), term, rill.zeros((), dtype=x.dtype))
        total = total + term
    for j in range(3):
        shape = [1, 1, 1, 1]
        shape[1 + j] = sizes[j]
        total = total / rill.tensor(counts[j].reshape(shape), dtype=x.dtype)
    return total


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x ** p over each 3-D window) ** (1 / p)."""
    k = _tuple(kernel_size, 3, "kernel_size", "lp_pool3d")
    out = avg_pool3d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (rill.sign(out) * rill.nn.functional.relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def _fold_args(op, kernel_size, dilation, padding, stride):
    k = _tuple(kernel_size, 2, "kernel_size", op)
    d = _tuple(dilation, 2, "dilation", op)
    p = _tuple(padding, 2, "padding", op)
    s = _tuple(stride, 2, "stride", op)
    if any(v <= 0 for v in k) or any(v <= 0 for v in d) or any(v <= 0 for v in s) or any(v < 0 for v in p):
        raise RuntimeError(f"[{op}] expected kernel_size, dilation and stride greater than zero and padding not "
                           f"negative, got kernel_size={list(k)}, dilation={list(d)}, padding={list(p)}, "
                           f"stride={list(s)}")
    return k, d, p, s


def _block_positions(size, k, d, p, s, op):
    """(output blocks, kernel) positions in the padded input along one dim."""
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    if out <= 0:
        raise RuntimeError(f"[{op}] Given input with spatial size {size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, calculated shape of the array of sliding blocks is {out}, "
                           f"but its components must be at least one")
    return np.arange(out)[:, None] * s + np.arange(k)[None, :] * d


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of (N, C, H, W) or (C, H, W) as (N, C * kH * kW, L) columns (im2col), gathered by
    index_select from the zero-padded input."""
    op = "unfold"
    if input.dim() not in (3, 4):
        raise RuntimeError(f"[{op}] Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size "
                           f"and non-zero dimensions, but got input of size {list(input.shape)}")
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    n, c, h, w = x.shape
    if c == 0 or h == 0 or w == 0:
        raise RuntimeError(f"[{op}] Expected non-zero channel and spatial sizes, got input of size "
                           f"{list(input.shape)}")
    pos = [_block_positions(h, k[0], d[0], p[0], s[0], op), _block_positions(w, k[1], d[1], p[1], s[1], op)]
    if any(p):
        x = rill.nn.functional.pad(x, (p[1], p[1], p[0], p[0]))
    x = x.reshape(n * c, h + 2 * p[0], w + 2 * p[1])
    blocks = _gather_windows(x, pos)  # (N * C, oh, ow, kh * kw)
    oh, ow = pos[0].shape[0], pos[1].shape[0]
    cols = blocks.reshape(n, c, oh * ow, k[0] * k[1]).transpose(2, 3).reshape(n, c * k[0] * k[1], oh * ow)
    return cols.squeeze(0) if unbatched else cols


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold (col2im): (N, C * kH * kW, L) or (C * kH * kW, L) columns summed into
    (N, C, *output_size), by index_add into the padded output, then cropped."""
    op = "fold"
    if input.dim() not in (2, 3):
        raise RuntimeError(f"[{op}] Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
                           f"and non-zero dimensions, but got input of size {list(input.shape)}")
    out_hw = _tuple(output_size, 2, "output_size", op)
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    n, ckk, length = x.shape
    if ckk % (k[0] * k[1]) != 0:
        raise RuntimeError(f"[{op}] Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={ckk} and kernel_size={list(k)}")
    pos = [_block_positions(out_hw[0], k[0], d[0], p[0], s[0], op),
           _block_positions(out_hw[1], k[1], d[1], p[1], s[1], op)]
    oh, ow = pos[0].shape[0], pos[1].shape[0]
    if oh * ow != length:
        raise RuntimeError(f"[{op}] Given output_size={list(out_hw)}, kernel_size={list(k)}, dilation={list(d)}, "
                           f"padding={list(p)}, stride={list(s)}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
                           f"input.size(2)={length}")
    c = ckk // (k[0] * k[1])
    ph, pw = out_hw[0] + 2 * p[0], out_hw[1] + 2 * p[1]
    # flat padded position of (kernel i, kernel j, block y, block x), in the columns' order
    flat = (pos[0].T[:, None, :, None] * pw + pos[1].T[None, :, None, :]).reshape(-1)
    out = rill.zeros((n, c, ph * pw), dtype=x.dtype)
    out = out.index_add(2, rill.tensor(flat, dtype=rill.int64), x.reshape(n, c, k[0] * k[1] * length))
    out = out.reshape(n, c, ph, pw)[:, :, p[0]:p[0] + out_hw[0], p[1]:p[1] + out_hw[1]]
    return out.squeeze(0) if unbatched else out


def _fractional_intervals(sample, size, out, k, np_dtype):
    """PyTorch's window starts of fractional max pooling along one dim, for one plane's sample u in [0, 1):
    int((i + u) * alpha) - int(u * alpha) with alpha = (size - k) / (out - 1), in the input's precision, and
    the last window flush with the end."""
    if out == 1:
        return np.array([size - k], dtype=np.int64)
    alpha = np_dtype(size - k) / np_dtype(out - 1)
    u = np_dtype(sample)
    starts = [int(np_dtype(np_dtype(i) + u) * alpha) - int(u * alpha) for i in range(out - 1)]
    return np.array(starts + [size - k], dtype=np.int64)


def _fractional_max_pool(op, n, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    x, lead = _batched(input, n, op)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"[{op}] \"{op}\" not implemented for '{input.dtype.name}'; convert the input with "
                           f".float()")
    spatial = tuple(x.shape[1:])
    k = _tuple(kernel_size, n, "kernel_size", op)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"[{op}] requires specifying either an output_size or an output_ratio")
        ratio = (output_ratio,) * n if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if len(ratio) == 1:
            ratio = ratio * n
        if not all(0 < r < 1 for r in ratio):
            raise ValueError(f"[{op}] output_ratio must be between 0 and 1 (got {list(ratio)})")
        out = tuple(int(spatial[j] * ratio[j]) for j in range(n))
    else:
        out = _tuple(output_size, n, "output_size", op)
    for j in range(n):  # PyTorch's 3-D check is strict: the windows may not reach the last position
        if out[j] + k[j] - 1 > spatial[j] - (n == 3) or out[j] <= 0 or k[j] <= 0:
            raise RuntimeError(f"[{op}] out(): pool size {k[j]} too large relative to input size {spatial[j]} "
                               f"for output size {out[j]} (dim {j})")
    planes = x.shape[0]
    channels = input.shape[-n - 1]
    batch = planes // channels if channels else 0
    if _random_samples is None:
        samples = rill.rand(batch, channels, n, dtype=input.dtype if input.dtype != rill.bfloat16 else rill.float32)
    else:
        samples = _random_samples  # PyTorch reads the first batch rows (an unbatched input: the first)
        if samples.dim() != 3 or tuple(samples.shape[1:]) != (channels, n) or samples.shape[0] < batch:
            raise RuntimeError(f"[{op}] expected _random_samples of shape ({batch}, {channels}, {n}), got "
                               f"{list(samples.shape)}")
        samples = samples[:batch]
    u = np.asarray(samples.float().tolist() if samples.dtype != rill.float64 else samples.tolist(),
                   dtype=np.float64).reshape(planes, n)
    np_dtype = np.float64 if input.dtype == rill.float64 else np.float32
    # PyTorch reads the samples in the dim order W, H (2-D) and T, H, W (3-D)
    order = [1, 0] if n == 2 else list(range(n))
    flat = np.zeros((planes,) + out + k, dtype=np.int64)
    for p in range(planes):
        grids = []
        for j in range(n):
            starts = _fractional_intervals(u[p, order[j]], spatial[j], out[j], k[j], np_dtype)
            grids.append(starts[:, None] + np.arange(k[j])[None, :])  # (out_j, k_j)
        index = np.zeros(out + k, dtype=np.int64)
        for j in range(n):
            shape = [1] * (2 * n)
            shape[j], shape[n + j] = out[j], k[j]
            index = index * spatial[j] + grids[j].reshape(shape)
        flat[p] = index
    index = rill.tensor(flat.reshape(planes, math.prod(out + k)), dtype=rill.int64)
    windows = x.reshape(planes, math.prod(spatial)).gather(1, index).reshape((planes,) + out + (math.prod(k),))
    values, arg = windows.max(-1)
    values = values.reshape(lead + out)
    if not return_indices:
        return values
    chosen = index.reshape((planes,) + out + (math.prod(k),)).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return values, chosen.reshape(lead + out)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """2-D fractional max pooling (Graham): windows of kernel_size at pseudo-random, increasing starts drawn per
    plane from _random_samples (N, C, 2) in [0, 1) (drawn with rill.rand when None)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """3-D fractional max pooling; _random_samples is (N, C, 3)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)
