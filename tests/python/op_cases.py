"""The op-parity table: one row per op case, driving test_op_parity.py.

A row names the op, gives the same computation as a rill callable and a torch callable (each takes the input
tensors, already laid out, and the module), the input specs to try, the dtypes, and whether gradients flow.
test_op_parity.py compares values and gradients with PyTorch for every row, spec and dtype, and checks
float64 gradients against finite differences. Adding an op = adding its rows here.

An input spec is a tuple of inputs; each input is an `In`: the shape of the base array (the leaf that gets
the gradient), an optional view applied to it (non-contiguous layouts), and the data's domain.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class In:
    """One input: a random base array of shape, then view (name in VIEWS) applied to the leaf."""
    shape: tuple
    view: str = None
    positive: bool = False   # values in [0.1, ...): log, sqrt, pow bases, divisors
    low: float = None
    high: float = None
    integer: bool = False    # an int64 input (no gradient), e.g. a where condition source; in [low, high)
                             # when given (class indices)
    boolean: bool = False    # a bool input (where's condition)


# Views that make an input non-contiguous; they work on rill and torch tensors alike.
VIEWS = {
    "t": lambda x: x.transpose(0, 1),
    "strided": lambda x: x[::2, 1::2],
    "expand": lambda x: x.expand(3, 4),
    "permute": lambda x: x.permute(2, 0, 1),
    "row": lambda x: x[1],
    "permute4": lambda x: x.permute(0, 3, 1, 2),
    "strided4": lambda x: x[:, :, ::2, 1:],
}

FLOATS = ("float32", "float64")
ALL_FLOATS = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class OpCase:
    name: str
    rill_fn: callable
    torch_fn: callable
    specs: tuple
    dtypes: tuple = FLOATS
    differentiable: bool = True
    finite_differences: bool = True   # False where the function has kinks at the test points (ties)
    grad_rtol: float = 0.0            # a looser rtol for gradients where PyTorch's own formula is less accurate
                                      # (its trigamma, digamma's gradient: 5e-10); finite differences still check


def same(fn):
    """The same lambda for both frameworks: fn(m, *inputs) with m the module (rill or torch)."""
    import rill
    import torch
    return (lambda *xs: fn(rill, *xs)), (lambda *xs: fn(torch, *xs))


def pair_of(rill_fn, torch_fn):
    """Different lambdas for the two frameworks, each fn(m, *inputs)."""
    import rill
    import torch
    return (lambda *xs: rill_fn(rill, *xs)), (lambda *xs: torch_fn(torch, *xs))


def case(name, fn, specs, **kw):
    r, t = same(fn)
    return OpCase(name, r, t, tuple(specs), **kw)


# Input layouts shared by elementwise rows.
UNARY = [(In((3, 4)),), (In((5,)),), (In(()),), (In((0, 3)),), (In((4, 3), "t"),), (In((6, 6), "strided"),),
         (In((3, 1), "expand"),)]
BINARY = [(In((3, 4)), In((3, 4))), (In((3, 1)), In((4,))), (In(()), In((2, 3))), (In((0, 3)), In((3,))),
          (In((4, 3), "t"), In((6, 8), "strided")), (In((3, 4, 2), "permute"), In((3, 1), "expand"))]


def positive(specs):
    return [tuple(In(i.shape, i.view, positive=True) for i in s) for s in specs]


def second_positive(specs):
    return [(s[0], In(s[1].shape, s[1].view, positive=True)) for s in specs]


# --- nn: pooling (kernels/cpu/pool.cpp, Note [Pooling on oneDNN]) -----------------------------------------
# float32 and bfloat16 run on oneDNN where it computes what PyTorch does, float16 and float64 on the loops; the
# comments name the path a float32 row's spec 0 takes (oneDNN from 2048 input elements). Specs after it add
# layouts (on the loops, being smaller): unbatched, batch 1, channels-last strides (permute4), a strided slice.
POOL_LAYOUTS = [(In((3, 5, 5)),), (In((1, 4, 6, 6)),), (In((2, 6, 6, 3), "permute4"),),
                (In((2, 3, 12, 7), "strided4"),)]
POOL_CASES = [
    # oneDNN: max without indices, forward and backward (through the saved workspace)
    case("max_pool2d", lambda m, x: m.nn.functional.max_pool2d(x, 2), [(In((2, 16, 8, 8)),), *POOL_LAYOUTS],
         dtypes=ALL_FLOATS),
    case("max_pool2d_pad_ceil", lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
         [(In((2, 16, 8, 8)),), (In((1, 2, 9, 9)),)], dtypes=ALL_FLOATS),
    case("max_pool2d_dilation", lambda m, x: m.nn.functional.max_pool2d(x, 3, 1, 1, dilation=2),
         [(In((2, 16, 9, 9)),)], dtypes=ALL_FLOATS),
    case("max_pool2d_dilation_ceil",
         lambda m, x: m.nn.functional.max_pool2d(x, (3, 2), 2, 1, dilation=(2, 3), ceil_mode=True),
         [(In((2, 16, 11, 10)),)], dtypes=ALL_FLOATS),
    # oneDNN over one piece per thread (64K input elements); not bfloat16, whose gradients where windows
    # overlap torch sums in bfloat16 (oneDNN in float32, as the float64 sum confirms)
    case("max_pool2d_large", lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1), [(In((2, 32, 32, 32)),)],
         dtypes=("float32",)),
    case("max_pool2d_large_k2", lambda m, x: m.nn.functional.max_pool2d(x, 2), [(In((2, 32, 32, 32)),)],
         dtypes=("float32", "bfloat16")),
    # the loops: PyTorch's flat indices (their values, and the indices themselves)
    case("max_pool2d_return_indices",
         lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)[0],
         [(In((2, 2, 8, 7)),), (In((2, 6, 6, 3), "permute4"),)], dtypes=ALL_FLOATS),
    case("max_pool2d_indices",
         lambda m, x: m.nn.functional.max_pool2d(x, (3, 2), 2, 1, dilation=(2, 1), return_indices=True)[1],
         [(In((2, 3, 9, 8)),)], dtypes=ALL_FLOATS, differentiable=False),
    # oneDNN: average including the padding, excluding it, ceil_mode without padding (excluding it is the same)
    # and with count_include_pad=False (extra right padding)
    case("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1), [(In((2, 16, 9, 9)),), *POOL_LAYOUTS],
         dtypes=ALL_FLOATS),
    case("avg_pool2d_exclude_pad", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         [(In((2, 16, 9, 9)),)], dtypes=ALL_FLOATS),
    case("avg_pool2d_ceil_no_pad", lambda m, x: m.nn.functional.avg_pool2d(x, (2, 3), ceil_mode=True),
         [(In((2, 16, 9, 8)),)], dtypes=ALL_FLOATS),
    case("avg_pool2d_ceil_exclude_pad",
         lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
         [(In((2, 16, 8, 8)),)], dtypes=ALL_FLOATS),
    case("avg_pool2d_large", lambda m, x: m.nn.functional.avg_pool2d(x, 2), [(In((2, 32, 32, 32)),)],
         dtypes=("float32", "bfloat16")),
    # the loops: ceil_mode's last window past the right padding (PyTorch divides by less than the kernel size),
    # divisor_override, a backward with windows 16 wide (where the loops are faster)
    case("avg_pool2d_ceil_include_pad", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
         [(In((2, 16, 8, 8)),)], dtypes=ALL_FLOATS),
    case("avg_pool2d_divisor", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, divisor_override=5),
         [(In((2, 16, 9, 9)),), (In((2, 6, 6, 3), "permute4"),)], dtypes=ALL_FLOATS),
    case("avg_pool2d_wide", lambda m, x: m.nn.functional.avg_pool2d(x, (2, 16)), [(In((2, 4, 8, 32)),)],
         dtypes=ALL_FLOATS),
    # oneDNN: uniform windows (the output size divides the input size), global pooling among them
    case("adaptive_avg_pool2d_uniform", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (4, 3)),
         [(In((2, 16, 8, 9)),), (In((2, 8, 6, 3), "permute4"),)], dtypes=ALL_FLOATS),
    case("adaptive_avg_pool2d_global", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 1),
         [(In((2, 32, 7, 7)),), (In((3, 5, 5)),)], dtypes=ALL_FLOATS),
    # the loops: windows of different sizes
    case("adaptive_avg_pool2d", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
         [(In((2, 3, 7, 8)),), (In((1, 2, 5, 7)),)], dtypes=ALL_FLOATS),
]


# --- nn: rill.nn.functional (ops-nn) ---------------------------------------------------------------------
# Targets are int64 class indices (In(..., integer=True, low=0, high=C)); ignore_index rows ignore a class that
# occurs. Weights PyTorch does not differentiate (loss weights) are detach()ed in both frameworks; those rows,
# and embedding's padding row (no gradient by definition), skip the finite-difference check.


def F(m):
    return m.nn.functional


def _cls(shape, classes):
    return In(shape, integer=True, low=0, high=classes)


SOFTMAX = [(In((3, 5)),), (In((2, 3, 4)),), (In((4, 3), "t"),), (In((0, 3)),), (In(()),), (In((2, 40)),)]
PAIR = [(In((3, 4)), In((3, 4))), (In((4, 3), "t"), In((3, 4))), (In((2, 3, 4)), In((2, 3, 4)))]
PROBS = [(In((3, 4), low=0.05, high=0.95), In((3, 4), low=0.0, high=1.0)),
         (In((6, 6), "strided", low=0.05, high=0.95), In((3, 3), low=0.0, high=1.0))]
IMAGE = [(In((2, 3, 4, 5)),), (In((1, 2, 3, 3)),)]

NN_CASES = [
    case("F.relu", lambda m, x: F(m).relu(x), UNARY[:2]),
    case("F.sigmoid", lambda m, x: F(m).sigmoid(x), UNARY[:2]),
    case("F.tanh", lambda m, x: F(m).tanh(x), UNARY[:2]),
    case("softmax", lambda m, x: F(m).softmax(x, -1), SOFTMAX, dtypes=ALL_FLOATS),
    case("softmax_dim0", lambda m, x: F(m).softmax(x, 0), [(In((3, 5)),), (In((2, 3, 4), "permute"),)]),
    case("softmax_dim1", lambda m, x: F(m).softmax(x, 1), [(In((2, 3, 4)),), (In((2, 17, 3)),)], dtypes=ALL_FLOATS),
    case("softmax_dtype", lambda m, x: F(m).softmax(x, -1, dtype=m.float64), [(In((3, 5)),)], dtypes=("float32",)),
    case("softmax_large", lambda m, x: F(m).softmax(x * 100, -1), [(In((3, 33)),)]),
    # 16-bit floats: PyTorch's CPU kernel rounds differently (results up to 2 ulp apart), so float32/64 only.
    case("log_softmax", lambda m, x: F(m).log_softmax(x, -1), SOFTMAX),
    case("log_softmax_dim1", lambda m, x: F(m).log_softmax(x, 1), [(In((2, 3, 4)),), (In((4, 3), "t"),)]),
    case("log_softmax_large", lambda m, x: F(m).log_softmax(x * 100, 1), [(In((3, 33)),)]),
    case("layer_norm", lambda m, x, w, b: F(m).layer_norm(x, (5,), w, b),
         [(In((3, 5)), In((5,)), In((5,))), (In((2, 3, 5)), In((5,)), In((5,))), (In((5, 3), "t"), In((5,)), In((5,))),
          (In((0, 5)), In((5,)), In((5,)))], dtypes=ALL_FLOATS),
    case("layer_norm_2d", lambda m, x, w, b: F(m).layer_norm(x, (3, 4), w, b, eps=1e-3),
         [(In((2, 3, 4)), In((3, 4)), In((3, 4)))]),
    case("layer_norm_plain", lambda m, x: F(m).layer_norm(x, [x.shape[-1]]), [(In((3, 4)),), (In((2, 40)),)]),
    case("layer_norm_weight", lambda m, x, w: F(m).layer_norm(x, (4,), w), [(In((3, 4)), In((4,)))]),
    case("layer_norm_bias", lambda m, x, b: F(m).layer_norm(x, (4,), None, b), [(In((3, 4)), In((4,)))]),
    case("layer_norm_offset", lambda m, x: F(m).layer_norm(x + 1000, (6,)), [(In((3, 6)),)], dtypes=("float64",)),
    case("linear", lambda m, x, w, b: F(m).linear(x, w, b),
         [(In((3, 4)), In((5, 4)), In((5,))), (In((2, 3, 4)), In((5, 4)), In((5,))), (In((4,)), In((5, 4)), In((5,))),
          (In((4, 3), "t"), In((4, 5), "t"), In((5,))), (In((0, 4)), In((5, 4)), In((5,)))], dtypes=ALL_FLOATS),
    case("linear_no_bias", lambda m, x, w: F(m).linear(x, w), [(In((3, 4)), In((5, 4))), (In((2, 2, 4)), In((1, 4)))]),
    case("embedding", lambda m, w, i: F(m).embedding(i, w), [(In((5, 3)), _cls((2, 4), 5)), (In((4, 2)), _cls((3,), 4))]),
    case("embedding_padding", lambda m, w, i: F(m).embedding(i, w, padding_idx=1), [(In((5, 3)), _cls((2, 6), 5))], finite_differences=False),
    case("embedding_padding_neg", lambda m, w, i: F(m).embedding(i, w, padding_idx=-1), [(In((4, 3)), _cls((7,), 4))], finite_differences=False),
    case("nll_loss", lambda m, x, t: F(m).nll_loss(x, t), [(In((4, 5)), _cls((4,), 5)), (In((5,)), _cls((), 5))]),
    case("nll_loss_sum", lambda m, x, t: F(m).nll_loss(x, t, reduction="sum"), [(In((4, 5)), _cls((4,), 5))]),
    case("nll_loss_none", lambda m, x, t: F(m).nll_loss(x, t, reduction="none"),
         [(In((4, 5)), _cls((4,), 5)), (In((2, 5, 3)), _cls((2, 3), 5))]),
    case("nll_loss_weight", lambda m, x, t, w: F(m).nll_loss(x, t, weight=w.detach(), ignore_index=2),
         [(In((6, 3)), _cls((6,), 3), In((3,), positive=True))], finite_differences=False),
    case("nll_loss_4d", lambda m, x, t: F(m).nll_loss(x, t, ignore_index=0), [(In((2, 3, 2, 2)), _cls((2, 2, 2), 3))]),
    case("cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t),
         [(In((4, 5)), _cls((4,), 5)), (In((5, 4), "t"), _cls((4,), 5)), (In((5,)), _cls((), 5)),
          (In((2, 3, 4)), _cls((2, 4), 3))], dtypes=ALL_FLOATS),
    case("cross_entropy_weight", lambda m, x, t, w: F(m).cross_entropy(x, t, w.detach(), ignore_index=1),
         [(In((6, 3)), _cls((6,), 3), In((3,), positive=True))], finite_differences=False),
    case("cross_entropy_smoothing", lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=0.2, ignore_index=3),
         [(In((6, 4)), _cls((6,), 4)), (In((2, 4, 3)), _cls((2, 3), 4))]),
    case("cross_entropy_smoothing_weight_sum", lambda m, x, t, w: F(m).cross_entropy(
        x, t, w.detach(), reduction="sum", label_smoothing=0.1), [(In((5, 3)), _cls((5,), 3), In((3,), positive=True))], finite_differences=False),
    case("cross_entropy_smoothing_weight_mean", lambda m, x, t, w: F(m).cross_entropy(
        x, t, w.detach(), ignore_index=0, label_smoothing=0.3), [(In((6, 3)), _cls((6,), 3), In((3,), positive=True))], finite_differences=False),
    case("cross_entropy_none", lambda m, x, t: F(m).cross_entropy(x, t, reduction="none", label_smoothing=0.1),
         [(In((4, 5)), _cls((4,), 5))]),
    case("cross_entropy_probs", lambda m, x, p: F(m).cross_entropy(x, p),
         [(In((4, 5)), In((4, 5), positive=True))]),
    case("cross_entropy_probs_options", lambda m, x, p, w: F(m).cross_entropy(x, p, w.detach(), reduction="sum",
                                                                            label_smoothing=0.25),
         [(In((3, 4)), In((3, 4), positive=True), In((4,), positive=True)),
          (In((2, 4, 3)), In((2, 4, 3), positive=True), In((4,), positive=True))], finite_differences=False),
    case("cross_entropy_probs_none", lambda m, x, p: F(m).cross_entropy(x, p, reduction="none"),
         [(In((2, 4, 3)), In((2, 4, 3), positive=True))]),
    case("mse_loss", lambda m, x, y: F(m).mse_loss(x, y), PAIR),
    case("mse_loss_none", lambda m, x, y: F(m).mse_loss(x, y, reduction="none"), PAIR[:1]),
    case("mse_loss_sum_weight", lambda m, x, y, w: F(m).mse_loss(x, y, reduction="sum", weight=w),
         [(In((3, 4)), In((3, 4)), In((3, 4), positive=True))]),
    case("l1_loss", lambda m, x, y: F(m).l1_loss(x, y), PAIR),
    case("l1_loss_sum", lambda m, x, y: F(m).l1_loss(x, y, reduction="sum"), PAIR[:1]),
    case("smooth_l1_loss", lambda m, x, y: F(m).smooth_l1_loss(x, y), PAIR),
    case("smooth_l1_loss_beta", lambda m, x, y: F(m).smooth_l1_loss(x, y, reduction="none", beta=0.5), PAIR[:2]),
    case("smooth_l1_loss_beta0", lambda m, x, y: F(m).smooth_l1_loss(x, y, beta=0.0), PAIR[:1]),
    case("binary_cross_entropy", lambda m, x, y: F(m).binary_cross_entropy(x, y), PROBS),
    case("binary_cross_entropy_weight", lambda m, x, y, w: F(m).binary_cross_entropy(
        x, y, w.detach(), reduction="sum"), [PROBS[0] + (In((4,), positive=True),)], finite_differences=False),
    case("binary_cross_entropy_none", lambda m, x, y: F(m).binary_cross_entropy(x, y, reduction="none"), PROBS[:1]),
    case("bce_with_logits", lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, y),
         [(In((3, 4)), In((3, 4), low=0.0, high=1.0)), (In((4, 3), "t"), In((3, 4), low=0.0, high=1.0))]),
    case("bce_with_logits_options", lambda m, x, y, w, pw: F(m).binary_cross_entropy_with_logits(
        x, y, w.detach(), reduction="none", pos_weight=pw.detach()),
         [(In((3, 4)), In((3, 4), low=0.0, high=1.0), In((3, 4), positive=True), In((4,), positive=True))], finite_differences=False),
    case("bce_with_logits_large", lambda m, x, y: F(m).binary_cross_entropy_with_logits(x * 30, y, reduction="sum"),
         [(In((3, 4)), In((3, 4), low=0.0, high=1.0))]),
    case("pad_constant", lambda m, x: F(m).pad(x, (1, 2)), [(In((2, 3, 4)),), (In((4, 3), "t"),)]),
    case("pad_constant_3d", lambda m, x: F(m).pad(x, (1, 1, 0, 2, 1, 0), value=1.5), [(In((2, 3, 4)),)]),
    case("pad_negative", lambda m, x: F(m).pad(x, (-1, 2, 1, -1)), [(In((3, 4)),)]),
    case("pad_reflect", lambda m, x: F(m).pad(x, (2, 1, 1, 2), mode="reflect"), [(In((1, 2, 4, 5)),)]),
    case("pad_reflect_1d", lambda m, x: F(m).pad(x, (3, 1), mode="reflect"), [(In((2, 3, 5)),)]),
    case("pad_replicate", lambda m, x: F(m).pad(x, (2, 1, 1, 3), mode="replicate"), [(In((1, 2, 3, 4)),)]),
    case("interpolate_nearest", lambda m, x: F(m).interpolate(x, size=(5, 7)), IMAGE),
    case("interpolate_nearest_scale", lambda m, x: F(m).interpolate(x, scale_factor=2), IMAGE[:1]),
    case("interpolate_nearest_down", lambda m, x: F(m).interpolate(x, size=(2, 3)), IMAGE[:1]),
    case("interpolate_bilinear", lambda m, x: F(m).interpolate(x, size=(6, 8), mode="bilinear"), IMAGE),
    case("interpolate_bilinear_corners", lambda m, x: F(m).interpolate(x, size=(7, 3), mode="bilinear",
                                                                       align_corners=True), IMAGE),
    case("interpolate_bilinear_scale", lambda m, x: F(m).interpolate(x, scale_factor=1.5, mode="bilinear"), IMAGE),
    case("interpolate_linear", lambda m, x: F(m).interpolate(x, size=7, mode="linear"), [(In((2, 3, 4)),)]),
    case("sdpa", lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
         [(In((2, 3, 4)), In((2, 5, 4)), In((2, 5, 6))), (In((2, 2, 3, 4)), In((2, 2, 3, 4)), In((2, 2, 3, 4)))]),
    case("sdpa_causal", lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
         [(In((2, 4, 3)), In((2, 4, 3)), In((2, 4, 3)))]),
    case("sdpa_bool_mask", lambda m, q, k, v, b: F(m).scaled_dot_product_attention(q, k, v, attn_mask=b > -1.0),
         [(In((2, 3, 4)), In((2, 5, 4)), In((2, 5, 4)), In((3, 5)))]),
    case("sdpa_float_mask", lambda m, q, k, v, b: F(m).scaled_dot_product_attention(q, k, v, attn_mask=b),
         [(In((2, 3, 4)), In((2, 5, 4)), In((2, 5, 4)), In((3, 5)))]),
    # the fused op (rill._sdpa) past one block of 64 queries and 128 keys, on (L, N, E) projections seen as
    # (N, L, E), as MultiheadAttention passes them; and a float mask broadcast over heads
    case("sdpa_blocks_causal", lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
         [(In((66, 1, 4), "t"), In((130, 1, 4), "t"), In((1, 130, 3)))]),
    case("sdpa_float_mask_heads", lambda m, q, k, v, b: F(m).scaled_dot_product_attention(q, k, v, attn_mask=b),
         [(In((2, 2, 3, 4)), In((2, 2, 5, 4)), In((2, 2, 5, 4)), In((2, 1, 5)))]),
    case("batch_norm_train", lambda m, x, w, b: F(m).batch_norm(x, m.zeros(3, dtype=x.dtype), m.ones(3, dtype=x.dtype),
                                                               w, b, training=True),
         [(In((4, 3)), In((3,)), In((3,))), (In((2, 3, 4, 2)), In((3,)), In((3,)))]),
    case("batch_norm_train_plain", lambda m, x: F(m).batch_norm(x, None, None, training=True, momentum=0.3),
         [(In((5, 3, 2)),)]),
    case("batch_norm_eval", lambda m, x, rm, rv, w, b: F(m).batch_norm(x, rm.detach(), rv.detach(), w, b),
         [(In((4, 3, 2)), In((3,)), In((3,), positive=True), In((3,)), In((3,)))], finite_differences=False),
    case("group_norm", lambda m, x, w, b: F(m).group_norm(x, 2, w, b),
         [(In((2, 4, 3)), In((4,)), In((4,))), (In((2, 6, 2, 2)), In((6,)), In((6,)))]),
    case("group_norm_plain", lambda m, x: F(m).group_norm(x, 3, eps=1e-3), [(In((3, 6, 5)),)]),
    case("dropout_eval", lambda m, x: F(m).dropout(x, 0.5, training=False) * 1, UNARY[:2]),
    case("dropout_p0", lambda m, x: F(m).dropout(x, 0.0) * 1, UNARY[:2]),
    case("dropout_p1", lambda m, x: F(m).dropout(x, 1.0), UNARY[:2]),
    case("one_hot", lambda m, t: F(m).one_hot(t, 5), [(_cls((2, 3), 5),), (_cls((0,), 5),)], differentiable=False),
    case("one_hot_infer", lambda m, t: F(m).one_hot(t), [(_cls((7,), 4),)], differentiable=False),
]


CASES = [
    # --- unary ---
    case("neg", lambda m, x: -x, UNARY, dtypes=ALL_FLOATS),
    case("abs", lambda m, x: m.abs(x), UNARY, dtypes=ALL_FLOATS),
    case("relu", lambda m, x: m.relu(x), UNARY, dtypes=ALL_FLOATS),
    case("exp", lambda m, x: m.exp(x), UNARY, dtypes=ALL_FLOATS),
    case("log", lambda m, x: m.log(x), positive(UNARY), dtypes=ALL_FLOATS),
    case("sqrt", lambda m, x: m.sqrt(x), positive(UNARY), dtypes=ALL_FLOATS),
    case("sigmoid", lambda m, x: m.sigmoid(x), UNARY, dtypes=ALL_FLOATS),
    case("tanh", lambda m, x: m.tanh(x), UNARY, dtypes=ALL_FLOATS),
    # --- binary ---
    case("add", lambda m, a, b: a + b, BINARY, dtypes=ALL_FLOATS),
    case("add_alpha", lambda m, a, b: m.add(a, b, alpha=2.5), BINARY),
    case("sub", lambda m, a, b: a - b, BINARY, dtypes=ALL_FLOATS),
    case("sub_alpha", lambda m, a, b: m.sub(a, b, alpha=0.5), BINARY),
    case("mul", lambda m, a, b: a * b, BINARY, dtypes=ALL_FLOATS),
    case("div", lambda m, a, b: a / b, second_positive(BINARY), dtypes=ALL_FLOATS),
    case("pow", lambda m, a, b: a ** b, positive(BINARY)),
    case("maximum", lambda m, a, b: m.maximum(a, b), BINARY, dtypes=ALL_FLOATS),
    case("minimum", lambda m, a, b: m.minimum(a, b), BINARY, dtypes=ALL_FLOATS),
    case("mixed_dtypes", lambda m, a, b: a * b.double(), BINARY[:3]),
    # --- with Python numbers ---
    case("add_scalar", lambda m, x: x + 2, UNARY),
    case("radd_scalar", lambda m, x: 2.5 + x, UNARY),
    case("sub_scalar", lambda m, x: x - 2, UNARY),
    case("rsub_scalar", lambda m, x: 2 - x, UNARY),
    case("mul_scalar", lambda m, x: x * 3, UNARY),
    case("rmul_scalar", lambda m, x: 0.5 * x, UNARY),
    case("div_scalar", lambda m, x: x / 4, UNARY),
    case("rdiv_scalar", lambda m, x: 3 / x, positive(UNARY)),
    case("pow_scalar", lambda m, x: x ** 3, UNARY),
    case("pow_scalar_float", lambda m, x: x ** 2.5, positive(UNARY)),
    case("pow_scalar_zero", lambda m, x: x ** 0, UNARY[:3]),
    case("rpow_scalar", lambda m, x: 2 ** x, UNARY),
    case("where", lambda m, c, a, b: m.where(c > 0, a, b),
         [(In((3, 4)), In((3, 4)), In((3, 4))), (In((3, 1)), In((4,)), In((6, 8), "strided"))]),
    case("where_number", lambda m, c, a: m.where(c > 0, a, 0.5), [(In((3, 4)), In((3, 4))), (In((4,)), In((0, 4)))]),
    # --- reductions ---
    case("sum", lambda m, x: x.sum(), UNARY),
    case("sum_dim", lambda m, x: x.sum(1), [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 3)),)]),
    case("sum_dims_keepdim", lambda m, x: x.sum((0, 2), keepdim=True), [(In((2, 3, 4)),), (In((2, 3, 4), "permute"),)]),
    case("sum_dtype", lambda m, x: x.sum(0, dtype=m.float64), [(In((3, 4)),)], dtypes=("float32",)),
    case("mean", lambda m, x: x.mean(), UNARY[:3] + UNARY[4:]),
    case("mean_dim", lambda m, x: x.mean(-1, keepdim=True), [(In((3, 4)),), (In((6, 6), "strided"),)]),
    case("amax", lambda m, x: x.amax(), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("amax_dim", lambda m, x: x.amax(1), [(In((3, 4)),), (In((2, 3, 4), "permute"),)]),
    case("amin_dims", lambda m, x: x.amin((0, 1), keepdim=True), [(In((3, 4)),), (In((2, 3, 4)),)]),
    case("max_all", lambda m, x: x.max(), [(In((3, 4)),), (In(()),)]),
    case("min_all", lambda m, x: x.min(), [(In((3, 4)),)]),
    case("max_dim", lambda m, x: x.max(1).values, [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("max_dim_keepdim", lambda m, x: x.max(0, keepdim=True)[0], [(In((3, 4)),), (In(()),)]),
    case("min_dim", lambda m, x: x.min(-1)[0], [(In((3, 4)),), (In((2, 3, 4), "permute"),)]),
    case("amax_ties", lambda m, x: m.maximum(x, m.zeros(()) + 0.5).amax(1), [(In((3, 4)),)],
         finite_differences=False),
    case("max_ties", lambda m, x: (x * 0).max(), [(In((3, 4)),)], finite_differences=False),
    # --- matmul ---
    case("matmul_2d", lambda m, a, b: a @ b, [(In((3, 4)), In((4, 2))), (In((4, 3), "t"), In((2, 4), "t")),
                                               (In((0, 4)), In((4, 2)))]),
    case("matmul_1d_1d", lambda m, a, b: m.matmul(a, b), [(In((4,)), In((4,)))]),
    case("matmul_2d_1d", lambda m, a, b: a @ b, [(In((3, 4)), In((4,)))]),
    case("matmul_1d_2d", lambda m, a, b: a @ b, [(In((4,)), In((4, 2)))]),
    case("matmul_batched", lambda m, a, b: m.matmul(a, b), [(In((2, 3, 4)), In((2, 4, 5))),
                                                              (In((2, 3, 4)), In((4, 5))),
                                                              (In((3, 1, 2, 4)), In((2, 4, 3)))]),
    case("mm", lambda m, a, b: m.mm(a, b), [(In((3, 4)), In((4, 2)))]),
    case("bmm", lambda m, a, b: m.bmm(a, b), [(In((2, 3, 4)), In((2, 4, 2)))]),
    # --- conversions and copies ---
    case("to_float64", lambda m, x: x.to(m.float64), UNARY[:2], dtypes=("float32",)),
    case("to_float32", lambda m, x: x.float(), UNARY[:2], dtypes=("float64",)),
    case("clone", lambda m, x: x.clone(), UNARY),
    case("contiguous", lambda m, x: x.contiguous() * 1, UNARY),
    case("copy_", lambda m, a, b: (a * 1).copy_(b), [(In((3, 4)), In((3, 4))), (In((3, 4)), In((4,)))]),
    case("fill_", lambda m, a: (a * 1).fill_(2.0) * a, [(In((3, 4)),)]),
    case("setitem", lambda m, a, b: _setitem(a, b), [(In((3, 4)), In((4,)))]),
    case("add_inplace", lambda m, a, b: (a * 1).add_(b), [(In((3, 4)), In((4,)))]),
    case("mul_inplace_view", lambda m, a, b: _mul_view(a, b), [(In((3, 4)), In((2,)))]),
    # --- views ---
    case("view", lambda m, x: x.view(4, 3) * 1, [(In((3, 4)),)]),
    case("reshape", lambda m, x: x.reshape(-1), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("transpose", lambda m, x: x.transpose(0, 1), [(In((3, 4)),)]),
    case("t", lambda m, x: x.t(), [(In((3, 4)),), (In((5,)),)]),
    case("T", lambda m, x: x.T, [(In((3, 4)),)]),
    case("mT", lambda m, x: x.mT, [(In((2, 3, 4)),)]),
    case("permute", lambda m, x: x.permute(1, 2, 0), [(In((2, 3, 4)),)]),
    case("expand", lambda m, x: x.expand(2, 3, 4), [(In((3, 1)),), (In((4,)),)]),
    case("expand_as", lambda m, x, y: x.expand_as(y) * y, [(In((3, 1)), In((3, 4)))]),
    case("getitem", lambda m, x: x[1:, ::2], [(In((3, 4)),)]),
    case("getitem_int", lambda m, x: x[..., 1], [(In((3, 4)),), (In((2, 3, 4)),)]),
    case("getitem_none", lambda m, x: x[None, 1:2], [(In((3, 4)),)]),
    case("select", lambda m, x: x.select(1, 2), [(In((3, 4)),)]),
    case("slice", lambda m, x: x[1:3, ::2] * 2 + x[-2:, 1:].sum(), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("narrow", lambda m, x: x.narrow(0, 1, 2), [(In((3, 4)),)]),
    case("squeeze", lambda m, x: x.squeeze(), [(In((3, 1, 4)),)]),
    case("squeeze_dim", lambda m, x: x.squeeze(1), [(In((3, 1, 4)),)]),
    case("unsqueeze", lambda m, x: x.unsqueeze(-1), [(In((3, 4)),)]),
    case("flatten", lambda m, x: x.flatten(), [(In((2, 3, 4)),), (In((2, 3, 4), "permute"),)]),
    case("view_chain", lambda m, x: x.t()[1:].unsqueeze(0).expand(2, 3, 3).sum(0), [(In((3, 4)),)]),
    # --- composites ---
    case("mlp", lambda m, x, w, b: ((x @ w + b).relu() * (x @ w).sigmoid()).mean(),
         [(In((4, 3)), In((3, 5)), In((5,)))]),
    # --- nn: convolution and pooling (autograd/conv.cpp) ---
    case("conv2d", lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=2, padding=1),
         [(In((2, 3, 7, 7)), In((4, 3, 3, 3)), In((4,))), (In((2, 6, 6, 3), "permute4"), In((4, 3, 3, 3)), In((4,)))]),
    case("conv2d_groups_dilation", lambda m, x, w: m.nn.functional.conv2d(x, w, groups=2, dilation=2),
         [(In((2, 4, 8, 8)), In((6, 2, 3, 3)))]),
    case("conv2d_same_unbatched", lambda m, x, w: m.nn.functional.conv2d(x, w, padding="same"),
         [(In((3, 6, 6)), In((2, 3, 2, 3)))]),
    case("conv1d", lambda m, x, w, b: m.nn.functional.conv1d(x, w, b, padding=2, stride=2),
         [(In((2, 3, 9)), In((5, 3, 4)), In((5,)))]),
    case("conv_transpose2d", lambda m, x, w, b: m.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                                  output_padding=1),
         [(In((2, 4, 4, 4)), In((4, 3, 3, 3)), In((3,)))]),
    *POOL_CASES,
    # --- nn: rill.nn.functional (ops-nn) -----------------------------------------------------------------
    *NN_CASES,
    # --- not differentiable ---
    case("eq", lambda m, a, b: a == b, BINARY[:2], differentiable=False),
    case("lt_scalar", lambda m, x: x < 0.5, UNARY[:2], differentiable=False),
    case("argmax", lambda m, x: x.argmax(1), [(In((3, 4)),)], differentiable=False),
    case("argmin", lambda m, x: m.argmin(x, dim=1, keepdim=True), [(In((3, 4)),), (In((4, 3), "t"),)],
         differentiable=False),
    # rill.minimum / maximum also take a number (torch: clamp)
    OpCase("minimum_maximum_scalar", *pair_of(lambda m, x: m.minimum(x, 0.25) * m.maximum(x, -0.25),
                                              lambda m, x: m.clamp(x, max=0.25) * m.clamp(x, min=-0.25)),
           (UNARY[0], UNARY[1])),
]



# --- the op library: elementwise ops, reductions and scans -------------------------------------------------
# Inputs with exact zeros that still carry a gradient of 1 (x minus a detached copy of its small entries):
# prod and cumprod gradients at zeros. Finite differences can't see through detach, so those rows skip them.
def _with_zeros(x):
    return x - (x * (x.abs() < 1)).detach()


def _f(name):
    """rill.nn.functional.<name> vs torch.nn.functional.<name>."""
    import rill.nn.functional
    import torch
    return getattr(rill.nn.functional, name), getattr(torch.nn.functional, name)


def fcase(name, fn_name, specs, *args, dtypes=ALL_FLOATS, differentiable=True, **kwargs):
    r, t = _f(fn_name)
    return OpCase(name, lambda x: r(x, *args, **kwargs), lambda x: t(x, *args, **kwargs), tuple(specs), dtypes=dtypes,
                  differentiable=differentiable)


INTS = ("int64", "int32", "int16", "int8")
DIVISORS = [(In((3, 4)), In((3, 4), low=1.0, high=5.0)), (In((3, 1)), In((4,), low=-5.0, high=-1.0)),
            (In((4, 3), "t"), In((6, 8), "strided", low=1.0, high=4.0)), (In((0, 3)), In((3,), low=1.0, high=3.0))]
SMALL_INTS = [(In((3, 4), low=-8.0, high=8.0), In((3, 4), low=-8.0, high=8.0)),
              (In((3, 1), low=-8.0, high=8.0), In((4,), low=0.0, high=8.0))]
BOOLS = [(In((3, 4), boolean=True), In((3, 4), boolean=True)), (In((3, 1), boolean=True), In((4,), boolean=True))]
REDUCE = [(In((3, 4)),), (In((4, 3), "t"),), (In((2, 3, 4), "permute"),), (In((6, 6), "strided"),)]
ZEROS_IN = [(In((6, 5)),), (In((5, 6), "t"),)]

CASES += [
    # unary
    case("log1p", lambda m, x: m.log1p(x), positive(UNARY), dtypes=ALL_FLOATS),
    case("expm1", lambda m, x: x.expm1(), UNARY, dtypes=ALL_FLOATS),
    case("rsqrt", lambda m, x: m.rsqrt(x), positive(UNARY), dtypes=ALL_FLOATS),
    case("sin", lambda m, x: m.sin(x), UNARY, dtypes=ALL_FLOATS),
    case("cos", lambda m, x: x.cos(), UNARY, dtypes=ALL_FLOATS),
    case("erf", lambda m, x: m.erf(x), UNARY, dtypes=ALL_FLOATS),
    case("reciprocal", lambda m, x: m.reciprocal(x), positive(UNARY), dtypes=ALL_FLOATS),
    case("square", lambda m, x: m.square(x), UNARY, dtypes=ALL_FLOATS),
    case("unary_int_to_float", lambda m, x: m.sin(x) + m.erf(x) + m.log1p(x.abs()) + m.reciprocal(x + 100),
         UNARY[:2], dtypes=INTS, differentiable=False),
    case("floor", lambda m, x: m.floor(x), UNARY, dtypes=ALL_FLOATS),
    case("ceil", lambda m, x: x.ceil(), UNARY, dtypes=ALL_FLOATS),
    case("trunc", lambda m, x: m.trunc(x), UNARY, dtypes=ALL_FLOATS),
    case("round", lambda m, x: m.round(x * 2), UNARY, dtypes=ALL_FLOATS),
    case("round_decimals", lambda m, x: m.round(x, decimals=2), UNARY[:3]),
    case("round_decimals_negative", lambda m, x: (x * 100).round(decimals=-1), UNARY[:2]),
    case("sign", lambda m, x: m.sign(x), UNARY, dtypes=ALL_FLOATS),
    case("rounding_ints", lambda m, x: m.floor(x) + m.ceil(x) * 2 + m.round(x) * 3 + m.trunc(x) + m.sign(x),
         UNARY[:2], dtypes=INTS, differentiable=False),
    case("square_int", lambda m, x: x.square(), UNARY[:2], dtypes=INTS, differentiable=False),
    case("sign_bool", lambda m, x: m.sign(x > 0), UNARY[:2], differentiable=False),
    # activations (rill.nn.functional's, from rill._C)
    fcase("gelu", "gelu", UNARY),
    fcase("gelu_tanh", "gelu", UNARY, approximate="tanh"),
    fcase("silu", "silu", UNARY),
    fcase("softplus", "softplus", UNARY),
    # NaN and infinities put in by where, whose backward sends them no gradient (a product would turn it into NaN)
    case("nan_to_num", lambda m, x: m.nan_to_num(m.where(x > 0.5, m.tensor(float("inf")), m.where(
        x < -0.5, m.tensor(float("nan")), x)), posinf=3.0) + m.where(x > 0, m.tensor(-float("inf")), x).nan_to_num(
        nan=1.5, neginf=-2.0), [(In((3, 4), low=-1.0, high=1.0),), (In((4, 3), "t", low=-1.0, high=1.0),)],
         dtypes=ALL_FLOATS),
    case("hardshrink", lambda m, x: m.nn.functional.hardshrink(x, 0.3) + x.hardshrink(lambd=0.6) + m.hardshrink(x),
         UNARY, dtypes=ALL_FLOATS),
    fcase("softplus_beta_threshold", "softplus", UNARY[:3], 2.0, 1.0, dtypes=FLOATS),
    fcase("leaky_relu", "leaky_relu", UNARY),
    fcase("leaky_relu_slope", "leaky_relu", UNARY[:3], 0.2, dtypes=FLOATS),
    fcase("elu", "elu", UNARY),
    fcase("elu_alpha", "elu", UNARY[:3], 1.5, dtypes=FLOATS),
    fcase("hardtanh", "hardtanh", UNARY),
    fcase("hardtanh_bounds", "hardtanh", UNARY[:3], -0.5, 2.0, dtypes=FLOATS),
    fcase("hardtanh_int", "hardtanh", UNARY[:2], -2, 3, dtypes=INTS, differentiable=False),
    # clamp
    case("clamp", lambda m, x: m.clamp(x, -0.5, 1.0), UNARY, dtypes=ALL_FLOATS),
    case("clamp_min", lambda m, x: x.clamp(min=0.5), UNARY),
    case("clamp_max_int_number", lambda m, x: m.clamp(x, max=1), UNARY[:3]),
    case("clip", lambda m, x: x.clip(-1, 1), UNARY[:3]),
    case("clamp_tensors", lambda m, x, lo, hi: m.clamp(x, lo, hi),
         [(In((3, 4)), In((3, 4), high=0.0), In((4,), low=0.0)), (In((3, 4)), In((3, 1)), In((4,)))]),
    case("clamp_min_tensor", lambda m, x, lo: m.clamp(x, min=lo), [(In((3, 4)), In((4,))), (In((4, 3), "t"), In(()))]),
    case("clamp_max_tensor", lambda m, x, hi: x.clamp(max=hi), [(In((3, 4)), In((3, 1)))]),
    case("clamp_min_method", lambda m, x, lo: x.clamp_min(lo) + m.clamp_max(x, 0.5), [(In((3, 4)), In((4,)))]),
    case("clamp_ints", lambda m, x: m.clamp(x, -2, 3) * 10 + m.clamp(x, min=1.5), UNARY[:2], dtypes=INTS,
         differentiable=False),
    # floor division and remainders
    case("floor_divide", lambda m, a, b: a // b, DIVISORS, differentiable=False),
    case("floor_divide_ints", lambda m, a, b: m.floor_divide(a, b), DIVISORS[:2], dtypes=INTS,
         differentiable=False),
    case("floor_divide_scalar", lambda m, x: (x // 0.7) + (3 // (x.abs() + 1)), UNARY[:3], differentiable=False),
    case("remainder", lambda m, a, b: a % b, DIVISORS),
    case("remainder_ints", lambda m, a, b: m.remainder(a, b), DIVISORS[:2], dtypes=INTS, differentiable=False),
    case("remainder_scalar", lambda m, x: (x % 1.5) + (x % -0.7), UNARY[:3]),
    case("rremainder_scalar", lambda m, x: 2.5 % x + m.remainder(-3, x), [(In((3, 4), low=1.0, high=3.0),)],
         differentiable=False),
    case("fmod", lambda m, a, b: m.fmod(a, b), DIVISORS),
    case("fmod_ints", lambda m, a, b: a.fmod(b), DIVISORS[:2], dtypes=INTS, differentiable=False),
    case("fmod_scalar", lambda m, x: m.fmod(x, 1.5) + x.fmod(-2), UNARY[:3]),
    # bitwise and logical
    case("bitwise_ints", lambda m, a, b: (a & b) + (a | b) * 3 + (a ^ b) * 7 + ~a + m.bitwise_not(b), SMALL_INTS,
         dtypes=INTS, differentiable=False),
    case("bitwise_ints_scalar", lambda m, a, b: (a & 6) + (5 | b) + (a ^ -3) + m.bitwise_and(a, b), SMALL_INTS,
         dtypes=INTS, differentiable=False),
    case("bitwise_scalar_reflected", lambda m, a, b: (6 & a) + (a | 5) + (-3 ^ b), SMALL_INTS, dtypes=INTS,
         differentiable=False),
    case("bitwise_bool", lambda m, a, b: ((a & b) ^ (a | ~b)) | (a ^ True), BOOLS, dtypes=("float32",),
         differentiable=False),
    case("logical", lambda m, a, b: m.logical_and(a, b).int() + m.logical_or(a, b).int() * 2 +
         m.logical_xor(a, b).int() * 4 + m.logical_not(a).int() * 8 + a.logical_and(b > 0).int() * 16,
         BINARY[:3] + [BINARY[4]], differentiable=False),
    case("logical_bool", lambda m, a, b: m.logical_xor(a, b), BOOLS, dtypes=("float32",), differentiable=False),
    case("logical_ints", lambda m, a, b: m.logical_and(a, b) | m.logical_not(b), SMALL_INTS, dtypes=INTS,
         differentiable=False),
    # atan2, lerp, addcmul, addcdiv
    case("atan2", lambda m, a, b: m.atan2(a, b), BINARY, dtypes=ALL_FLOATS),
    case("logaddexp", lambda m, a, b: m.logaddexp(a, b) + a.logaddexp(other=b * 3), BINARY, dtypes=ALL_FLOATS),
    case("atan2_ints", lambda m, a, b: m.atan2(a, b), SMALL_INTS, dtypes=INTS, differentiable=False),
    case("lerp", lambda m, a, b, w: m.lerp(a, b, w),
         [(In((3, 4)), In((3, 4)), In((3, 4), low=-0.5, high=1.5)), (In((3, 1)), In((4,)), In(())),
          (In((4, 3), "t"), In((6, 8), "strided"), In((3, 1), "expand"))]),
    case("lerp_scalar", lambda m, a, b: a.lerp(b, 0.3) + m.lerp(a, b, 0.8), BINARY[:4], dtypes=ALL_FLOATS),
    case("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5),
         [(In((3, 4)), In((3, 4)), In((3, 4))), (In((4,)), In((3, 1)), In((4, 3), "t"))], dtypes=ALL_FLOATS),
    case("addcdiv", lambda m, x, a, b: x.addcdiv(a, b, value=-2),
         [(In((3, 4)), In((3, 4)), In((3, 4), positive=True)), (In(()), In((3, 1)), In((4,), low=1.0, high=2.0))],
         dtypes=ALL_FLOATS),
    case("addcmul_ints", lambda m, x, a, b: m.addcmul(x, a, b, value=3), [SMALL_INTS[0] + (In((4,)),)], dtypes=INTS,
         differentiable=False),
    case("inplace_ops", lambda m, x, b: _inplace_chain(x, b), [(In((3, 4)), In((4,), low=1.0, high=2.0))]),
    # reductions
    case("prod", lambda m, x: x.prod(), [(In((3, 4), low=0.5, high=1.5),), (In(()),), (In((0, 3)),)]),
    case("prod_dim", lambda m, x: m.prod(x, 1), [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 3)),)]),
    case("prod_keepdim_dtype", lambda m, x: x.prod(-1, keepdim=True, dtype=m.float64), [(In((3, 4)),)],
         dtypes=("float32",)),
    case("prod_zeros", lambda m, x: _with_zeros(x).prod(1), ZEROS_IN, finite_differences=False),
    case("prod_zeros_dim0", lambda m, x: _with_zeros(x).prod(0, keepdim=True), ZEROS_IN, finite_differences=False),
    case("prod_zeros_all", lambda m, x: _with_zeros(x[:2]).prod(), [(In((3, 4)),)], finite_differences=False),
    case("prod_ints", lambda m, x: m.prod(x, 0).sum() + x.prod() + (x > 0).prod(1).sum(), [SMALL_INTS[0][:1]],
         dtypes=INTS,
         differentiable=False),
    case("var", lambda m, x: x.var(), REDUCE, dtypes=ALL_FLOATS),
    case("var_dim", lambda m, x: m.var(x, 1), REDUCE),
    case("var_biased_keepdim", lambda m, x: x.var((0, -1), unbiased=False, keepdim=True), REDUCE[2:3]),
    case("var_correction", lambda m, x: m.var(x, dim=0, correction=2), REDUCE[:2]),
    case("var_positional_unbiased", lambda m, x: x.var(0, False), REDUCE[:1]),
    case("var_unbiased", lambda m, x: m.var(x, False) + x.var(unbiased=True), REDUCE[:2]),
    case("std", lambda m, x: x.std(), REDUCE, dtypes=ALL_FLOATS),
    case("std_dim", lambda m, x: m.std(x, -1, keepdim=True), REDUCE),
    case("std_correction", lambda m, x: x.std(dim=(0, 1), correction=0), REDUCE[:2]),
    case("std_positional_unbiased", lambda m, x: m.std(x, 1, False, True), REDUCE[:2]),
    case("std_unbiased", lambda m, x: x.std(False) + m.std(x, True), REDUCE[:2]),
    case("std_constant", lambda m, x: (x * 0).std(1), [(In((3, 4)),)], finite_differences=False),
    case("logsumexp", lambda m, x: m.logsumexp(x, 1), REDUCE, dtypes=ALL_FLOATS),
    case("logsumexp_dims", lambda m, x: x.logsumexp((0, 1), keepdim=True), REDUCE[:3]),
    case("logsumexp_large", lambda m, x: m.logsumexp(x * 100, -1), [(In((3, 4)),)]),
    case("logsumexp_empty", lambda m, x: m.logsumexp(x, 0), [(In((0, 3)),)]),
    case("logsumexp_int", lambda m, x: m.logsumexp(x, 0), [SMALL_INTS[0][:1]], dtypes=INTS, differentiable=False),
    case("any_all", lambda m, x: m.any(x > 1).int() + m.all(x > -3, 1).int().sum() + x.any(0).int().sum()
         + x.all(dim=(0, 1), keepdim=True).int().sum(), REDUCE + [(In((0, 3)),)], differentiable=False),
    case("any_all_ints", lambda m, x: m.any(x, 1).int() + m.all(x).int(), [(In((3, 4), low=0.0, high=4.0),)],
         dtypes=("int64", "uint8", "int8"), differentiable=False),
    case("any_empty_dim", lambda m, x: m.any(x, 1).int() + m.all(x, 1).int(), [(In((0, 3)),), (In((3, 0)),)],
         differentiable=False),
    case("norm", lambda m, x: x.norm(), REDUCE, dtypes=ALL_FLOATS),
    case("norm_p1_dim", lambda m, x: m.norm(x, 1, 1), REDUCE),
    case("norm_inf", lambda m, x: x.norm(float("inf"), dim=0), REDUCE),
    case("norm_neg_inf", lambda m, x: m.norm(x, p=-float("inf"), dim=1, keepdim=True), REDUCE[:2]),
    case("norm_fro_dims", lambda m, x: m.norm(x, "fro", dim=(0, 1)), REDUCE[:3]),
    case("norm_p3", lambda m, x: x.norm(3, dim=1), REDUCE[:2]),
    case("norm_p_half", lambda m, x: x.norm(0.5, dim=1), positive(REDUCE[:2])),
    case("norm_p0", lambda m, x: x.norm(0, dim=1), REDUCE[:2]),
    case("norm_zero_vector", lambda m, x: m.norm(x, dim=1) + x.norm(1, dim=1) + x.norm(3, dim=1),
         [(In((3, 4), low=0.0, high=0.0),)], finite_differences=False),
    case("norm_dtype", lambda m, x: m.norm(x, dtype=m.float64), [(In((3, 4)),)], dtypes=("float32",)),
    case("vector_norm", lambda m, x: m.linalg.vector_norm(x) + m.linalg.vector_norm(x, 1, dim=0).sum()
         + m.linalg.vector_norm(x, float("inf"), dim=(0, 1), keepdim=True).sum(), REDUCE[:2]),
    case("vector_norm_ties", lambda m, x: m.linalg.vector_norm(m.clamp(x, -1, 1), float("inf"), dim=1),
         [(In((3, 4)),)], finite_differences=False),
    # scans
    case("cumsum", lambda m, x: m.cumsum(x, 1), REDUCE + [(In((0, 3)),)], dtypes=ALL_FLOATS),
    case("cumsum_0d", lambda m, x: m.cumsum(x, 0) + x.cumprod(-1), [(In(()),)]),
    case("cumsum_dim0", lambda m, x: x.cumsum(0), REDUCE + [(In((5,)),)]),
    case("cumsum_dtype", lambda m, x: x.cumsum(-1, dtype=m.float64), REDUCE[:2], dtypes=("float32",)),
    case("cumsum_ints", lambda m, x: m.cumsum(x, 0) + x.cumsum(1) + (x > 0).cumsum(0), [SMALL_INTS[0][:1]],
         dtypes=INTS, differentiable=False),
    case("cumprod", lambda m, x: m.cumprod(x, 1), REDUCE + [(In((0, 3)),)], dtypes=ALL_FLOATS),
    case("cumprod_dim0", lambda m, x: x.cumprod(0), REDUCE[:2]),
    case("cumprod_zeros", lambda m, x: m.cumprod(_with_zeros(x), 1), ZEROS_IN, finite_differences=False),
    case("cumprod_zeros_dim0", lambda m, x: _with_zeros(x).cumprod(0), ZEROS_IN, finite_differences=False),
    case("cumprod_ints", lambda m, x: m.cumprod(x, 1) + x.cumprod(0, dtype=m.int64), [SMALL_INTS[0][:1]],
         dtypes=INTS, differentiable=False),
]


def _inplace_chain(x, b):
    h = x * 1
    h.clamp_(-1, 1).sin_().square_()
    h.lerp_(b, 0.25).addcmul_(x, b, value=0.5).addcdiv_(x, b)
    h.remainder_(b)
    return h


def _setitem(a, b):
    h = a * 2
    h[1] = b
    h[0, 1:] = b[:3].exp()
    return h


def _mul_view(a, b):
    h = a * 1
    h[1:, 2:].mul_(b)
    return h


# ======================================================================================================
# Shape, indexing and sorting ops. Index arguments are built inside the row's
# function from fixed data (m.tensor([...])), so the same indices go to rill and torch.
# ======================================================================================================

def _pieces(m, parts, dim):
    """Every piece of a split/chunk, weighted by its position, put back together (each gets a gradient)."""
    return m.cat([p * (i + 1) for i, p in enumerate(parts)], dim)


def _setitem_advanced(m, a, b):
    h = a * 1
    h[[0, 2]] = b
    h[:, [1, 3]] = 0.5
    return h


def _setitem_mask(m, a, b):
    h = a * 1
    h[m.tensor([True, False, True])] = b
    h[h > 1] = 0.0
    return h


def _setitem_iadd_duplicates(m, a, b):
    h = a * 1
    h[[0, 0, 2]] += b   # no accumulation over the repeated index, as in PyTorch
    return h


def _setitem_separated(m, a, b):
    h = a * 1
    h[[0, 1], :, [1, 3]] = b   # the indexed dims are separated: values are shaped (2, 3)
    return h


def _masked_fill_inplace(m, x):
    h = x * 1
    h.masked_fill_(x > 0, -1.0)
    return h


def _scatter_inplace(m, x, s):
    h = x * 1
    h.scatter_(1, m.tensor([[1], [0], [3]]), s)
    return h


def _tril_inplace(m, x):
    h = x * 2
    h.tril_(-1)
    return h


def _index_add_inplace(m, x, s):
    h = x * 1
    h.index_add_(1, m.tensor([0, 3]), s, alpha=-1.5)
    return h


INTS = ("int64", "int32", "uint8")


CASES += [
    # --- shape ---
    case("cat", lambda m, a, b: m.cat([a, b], 1), [(In((3, 4)), In((3, 2))), (In((4, 3), "t"), In((3, 2))),
                                                    (In((3, 0)), In((3, 2)))], dtypes=ALL_FLOATS),
    case("cat_dim0", lambda m, a, b: m.cat((a, b)), [(In((0, 4)), In((2, 4))), (In((3, 4)), In((6, 8), "strided"))]),
    case("cat_promote", lambda m, a, b: m.cat([a, b.double()], -1), [(In((3, 4)), In((3, 2)))], dtypes=("float32",)),
    case("cat_empty_1d", lambda m, a: m.concat([m.zeros(0, dtype=a.dtype), a, m.zeros(0, dtype=a.dtype)], 0),
         [(In((3, 4)),)]),
    case("cat_int", lambda m, a, b: m.cat([a, b]), [(In((3, 4)), In((2, 4)))], dtypes=INTS + ("bool",),
         differentiable=False),
    case("stack", lambda m, a, b: m.stack([a, b], 1), [(In((3, 4)), In((3, 4))), (In((4, 3), "t"), In((3, 4)))]),
    case("stack_neg_dim", lambda m, a, b: m.stack((a, b), -1), [(In((3, 4)), In((3, 4))), (In(()), In(()))]),
    case("split", lambda m, x: _pieces(m, x.split(3, 1), 1), [(In((3, 8)),), (In((8, 3), "t"),)]),
    case("split_sizes", lambda m, x: _pieces(m, m.split(x, [1, 0, 2], 0), 0), [(In((3, 4)),)]),
    case("chunk", lambda m, x: _pieces(m, x.chunk(3, -1), -1), [(In((2, 7)),), (In((2, 3, 4), "permute"),)]),
    case("unflatten", lambda m, x: x.unflatten(1, (2, -1)), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("movedim", lambda m, x: m.movedim(x, (0, 1), (2, 0)), [(In((2, 3, 4)),)]),
    case("moveaxis", lambda m, x: x.moveaxis(0, -1), [(In((2, 3, 4)),)]),
    case("repeat", lambda m, x: x.repeat(2, 1, 3), [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 2)),)]),
    case("repeat_1d", lambda m, x: x.repeat((3,)), [(In((4,)),)]),
    case("tile", lambda m, x: m.tile(x, (2,)), [(In((3, 4)),), (In(()),)]),
    case("flip", lambda m, x: m.flip(x, (0, 1)), [(In((3, 4)),), (In((6, 6), "strided"),), (In((0, 3)),)],
         dtypes=ALL_FLOATS),
    case("flip_method", lambda m, x: x.flip(-1), [(In((2, 3, 4)),)]),
    case("fliplr", lambda m, x: m.fliplr(x) * 1, [(In((3, 4)),)]),
    case("flip_int", lambda m, x: x.flip(0), [(In((3, 4)),)], dtypes=INTS + ("bool",), differentiable=False),
    case("roll", lambda m, x: m.roll(x, 1), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("roll_dims", lambda m, x: x.roll((1, -5), (0, 1)), [(In((3, 4)),), (In((6, 8), "strided"),)]),
    case("tril", lambda m, x: m.tril(x), [(In((3, 4)),), (In((4, 3), "t"),), (In((2, 3, 4)),)]),
    case("tril_diag", lambda m, x: x.tril(-1), [(In((4, 4)),), (In((2, 3, 4), "permute"),)]),
    case("triu", lambda m, x: m.triu(x, 1), [(In((3, 4)),), (In((0, 3)),)], dtypes=ALL_FLOATS),
    case("tril_inplace", lambda m, x: _tril_inplace(m, x), [(In((3, 4)),)]),
    case("triu_int", lambda m, x: x.triu(), [(In((3, 4)),)], dtypes=INTS + ("bool",), differentiable=False),
    case("diag_1d", lambda m, x: m.diag(x), [(In((4,)),), (In((6, 8), "row"),)]),
    case("diag_1d_offset", lambda m, x: m.diag(x, -2), [(In((3,)),)]),
    case("diag_2d", lambda m, x: m.diag(x), [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("diag_2d_offset", lambda m, x: x.diag(1), [(In((3, 4)),)]),
    case("diagonal", lambda m, x: x.diagonal(0, 1, 2) * 1, [(In((2, 3, 4)),)]),
    case("view_as", lambda m, x, y: x.view_as(y) * y, [(In((3, 4)), In((12,)))]),
    case("reshape_as", lambda m, x, y: x.reshape_as(y) * y, [(In((4, 3), "t"), In((2, 6)))]),
    # --- indexing ---
    case("getitem_list", lambda m, x: x[[0, 2, 2]], [(In((3, 4)),), (In((4, 3), "t"),)], dtypes=ALL_FLOATS),
    case("getitem_empty_list", lambda m, x: x[[]], [(In((3, 4)),)]),
    case("getitem_tensor_2d", lambda m, x: x[m.tensor([[0, 1], [2, 0]])], [(In((3, 4)),)]),
    case("getitem_negative", lambda m, x: x[m.tensor([-1, 0])], [(In((3, 4)),)]),
    case("getitem_adjacent", lambda m, x: x[:, [0, 2], [1, 3]], [(In((2, 3, 4)),), (In((3, 4, 4), "permute"),)]),
    case("getitem_separated", lambda m, x: x[[0, 1], :, [1, 3]], [(In((2, 3, 4)),)]),
    case("getitem_int_and_list", lambda m, x: x[0, :, [1, 2]], [(In((2, 3, 4)),)]),
    case("getitem_slice_list", lambda m, x: x[1:, [0, 2]], [(In((3, 4)),), (In((6, 8), "strided"),)]),
    case("getitem_none_list", lambda m, x: x[None, [0, 1], ..., ::2], [(In((3, 4)),)]),
    case("getitem_mask", lambda m, x: x[x > 0], [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 3)),)]),
    case("getitem_mask_rows", lambda m, x: x[m.tensor([True, False, True])], [(In((3, 4)),)]),
    case("getitem_mask_list", lambda m, x: x[:, [True, False, True, True]], [(In((3, 4)),)]),
    case("getitem_bool", lambda m, x: x[True], [(In((3, 4)),)]),
    case("getitem_int_tensors", lambda m, x: x[m.tensor([[2, 0], [1, 1]]).int()], [(In((3, 4)),)], dtypes=INTS,
         differentiable=False),
    case("setitem_advanced", lambda m, a, b: _setitem_advanced(m, a, b), [(In((3, 4)), In((4,))),
                                                                         (In((4, 3), "t"), In((2, 4)))]),
    case("setitem_mask", lambda m, a, b: _setitem_mask(m, a, b), [(In((3, 4)), In((4,)))]),
    # PyTorch (and rill) give each repeated index the gradient, though only one write lands: not a derivative.
    case("setitem_iadd_duplicates", lambda m, a, b: _setitem_iadd_duplicates(m, a, b), [(In((3, 4)), In((4,)))],
         finite_differences=False),
    case("setitem_separated", lambda m, a, b: _setitem_separated(m, a, b), [(In((2, 3, 4)), In((2, 3)))]),
    case("index_put_accumulate", lambda m, x, v: x.index_put((m.tensor([0, 0, 2]),), v, accumulate=True),
         [(In((3, 4)), In((3, 4))), (In((3, 4)), In((4,)))]),
    case("index_put", lambda m, x, v: m.index_put(x, (m.tensor([1, 0]), m.tensor([3, 3])), v), [(In((3, 4)), In(()))]),
    case("index_select", lambda m, x: m.index_select(x, 1, m.tensor([3, 0, 0])), [(In((3, 4)),), (In((4, 4), "t"),)],
         dtypes=ALL_FLOATS),
    case("index_select_scalar", lambda m, x: x.index_select(0, m.tensor(1)), [(In((3, 4)),), (In((5,)),)]),
    case("index_select_int", lambda m, x: x.index_select(0, m.tensor([2, 2, 0])), [(In((3, 4)),)],
         dtypes=INTS + ("bool",), differentiable=False),
    case("gather", lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [1, 0], [3, 2]])), [(In((3, 4)),), (In((4, 3), "t"),)],
         dtypes=ALL_FLOATS),
    case("gather_dim0", lambda m, x: x.gather(0, m.tensor([[2, 0, 1, 1]])), [(In((3, 4)),)]),
    case("gather_empty", lambda m, x: x.gather(1, m.zeros(3, 0, dtype=m.int64)), [(In((3, 4)),)]),
    case("gather_int", lambda m, x: x.gather(1, m.tensor([[0, 0], [1, 0], [3, 2]])), [(In((3, 4)),)], dtypes=INTS,
         differentiable=False),
    case("scatter", lambda m, x, s: x.scatter(1, m.tensor([[0, 1], [2, 3], [3, 0]]), s),
         [(In((3, 4)), In((3, 2))), (In((4, 3), "t"), In((3, 2)))]),
    case("scatter_value", lambda m, x: m.scatter(x, 0, m.tensor([[2, 0, 1]]), value=2.5), [(In((3, 4)),)]),
    case("scatter_inplace", lambda m, x, s: _scatter_inplace(m, x, s), [(In((3, 4)), In((3, 1)))]),
    case("scatter_add", lambda m, x, s: x.scatter_add(1, m.tensor([[0, 0], [1, 1], [3, 3]]), s),
         [(In((3, 4)), In((3, 2))), (In((4, 3), "t"), In((3, 2)))]),
    case("scatter_reduce_add", lambda m, x, s: x.scatter(1, m.tensor([[0, 0], [1, 1], [3, 3]]), s, reduce="add"),
         [(In((3, 4)), In((3, 2)))], differentiable=False),
    case("scatter_reduce_multiply",
         lambda m, x, s: x.scatter(1, m.tensor([[0, 0], [1, 1], [3, 3]]), s, reduce="multiply"),
         [(In((3, 4)), In((3, 2)))], dtypes=("float32", "int64"), differentiable=False),
    case("index_add", lambda m, x, s: x.index_add(0, m.tensor([0, 2, 0]), s, alpha=2),
         [(In((3, 4)), In((3, 4))), (In((4, 3), "t"), In((4, 3), "t"))]),
    case("index_add_dim1", lambda m, x, s: m.index_add(x, 1, m.tensor([3, 1]), s), [(In((3, 4)), In((3, 2)))]),
    case("index_add_inplace", lambda m, x, s: _index_add_inplace(m, x, s), [(In((3, 4)), In((3, 2)))]),
    case("index_add_int", lambda m, x, s: x.index_add(0, m.tensor([0, 0]), s), [(In((3, 4)), In((2, 4)))],
         dtypes=INTS, differentiable=False),
    case("masked_fill", lambda m, x: x.masked_fill(x > 0, 1.5), [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 2)),)],
         dtypes=ALL_FLOATS),
    case("masked_fill_broadcast", lambda m, x: m.masked_fill(x, m.tensor([True, False, False, True]), -2),
         [(In((3, 4)),)]),
    case("masked_fill_tensor", lambda m, x, v: x.masked_fill(x > 0, v), [(In((3, 4)), In(()))]),
    case("masked_fill_inplace", lambda m, x: _masked_fill_inplace(m, x), [(In((3, 4)),)]),
    case("masked_fill_int", lambda m, x: x.masked_fill(x > 0, 7), [(In((3, 4)),)], dtypes=INTS + ("bool",),
         differentiable=False),
    case("masked_select", lambda m, x: m.masked_select(x, x > 0), [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 3)),)]),
    case("masked_select_broadcast", lambda m, x: x.masked_select(m.tensor([True, False, True, True])),
         [(In((3, 4)),), (In(()),)]),
    case("take_along_dim", lambda m, x: m.take_along_dim(x, m.tensor([[0, 3], [1, 1], [2, 0]]), 1), [(In((3, 4)),)]),
    case("take_along_dim_broadcast", lambda m, x: m.take_along_dim(x, m.tensor([[0], [2]]), dim=0), [(In((3, 4)),)]),
    case("take_along_dim_flat", lambda m, x: x.take_along_dim(m.tensor([0, 5, 11, 5])), [(In((3, 4)),)]),
    case("nonzero", lambda m, x: m.nonzero(x), [(In((3, 4)),), (In((5,)),), (In(()),), (In((0, 3)),)],
         dtypes=("float32", "int32", "uint8", "bool"), differentiable=False),
    case("nonzero_tuple", lambda m, x: m.stack(m.nonzero(x > 0, as_tuple=True)), [(In((3, 4)),), (In((2, 3, 4)),)],
         differentiable=False),
    case("where_one_arg", lambda m, x: m.stack(m.where(x > 0)), [(In((3, 4)),), (In((4, 3), "t"),)],
         differentiable=False),
    case("argwhere", lambda m, x: m.argwhere(x > 0), [(In((3, 4)),)], differentiable=False),
    # --- sorting ---
    case("sort", lambda m, x: x.sort(1).values, [(In((3, 4)),), (In((4, 3), "t"),), (In((0, 3)),)],
         dtypes=ALL_FLOATS),
    case("sort_default_dim", lambda m, x: m.sort(x).values, [(In(()),), (In((5,)),)]),
    case("sort_descending", lambda m, x: m.sort(x, 0, descending=True)[0], [(In((3, 4)),), (In((6, 8), "strided"),)]),
    case("sort_indices", lambda m, x: m.sort(x, stable=True).indices, [(In((3, 4)),), (In((2, 3, 4), "permute"),)],
         dtypes=("float32", "int64", "bool"), differentiable=False),
    case("sort_int", lambda m, x: x.sort(0, descending=True).values, [(In((5, 3)),)], dtypes=INTS + ("bool",),
         differentiable=False),
    case("argsort", lambda m, x: m.argsort(x, dim=0, descending=True), [(In((3, 4)),)], differentiable=False),
    case("argsort_stable", lambda m, x: x.argsort(stable=True, dim=1), [(In((3, 4)),)], differentiable=False),
    case("topk", lambda m, x: x.topk(2, 1).values, [(In((3, 4)),), (In((4, 3), "t"),)], dtypes=ALL_FLOATS),
    case("topk_smallest", lambda m, x: m.topk(x, 3, 0, largest=False)[0], [(In((3, 4)),), (In((5,)),)]),
    case("topk_indices", lambda m, x: x.topk(2).indices, [(In((3, 4)),)], differentiable=False),
    case("kthvalue", lambda m, x: x.kthvalue(2, 1).values, [(In((3, 4)),), (In((4, 3), "t"),)]),
    case("kthvalue_keepdim", lambda m, x: m.kthvalue(x, 3, 0, keepdim=True)[0], [(In((3, 4)),)]),
    case("kthvalue_indices", lambda m, x: x.kthvalue(1).indices, [(In((3, 4)),)], differentiable=False),
    case("unique", lambda m, x: m.unique(x), [(In((4, 5)),), (In((0,)),)], dtypes=("int64", "float32", "bool"),
         differentiable=False),
    case("unique_inverse", lambda m, x: x.unique(return_inverse=True)[1], [(In((4, 5)),)], dtypes=("int64",),
         differentiable=False),
    case("unique_counts", lambda m, x: m.unique(x, return_inverse=True, return_counts=True)[2], [(In((4, 5)),)],
         dtypes=("int64",), differentiable=False),
    # slices along a dim (values in [-1, 1) as int64 or bool repeat, so slices do too)
    case("unique_dim", lambda m, x: m.unique(x, dim=1), [(In((2, 6, 2)),), (In((6, 4), "t"),)],
         dtypes=("int64", "float32", "bool"), differentiable=False),
    case("unique_dim_empty", lambda m, x: m.unique(x, dim=0), [(In((0, 3)),)], dtypes=("int64", "float32"),
         differentiable=False),
    case("unique_dim_inverse", lambda m, x: m.unique(x, dim=0, return_inverse=True)[1], [(In((8, 2)),)],
         dtypes=("int64", "bool"), differentiable=False),
    case("unique_dim_counts", lambda m, x: x.unique(dim=-1, return_inverse=True, return_counts=True)[2],
         [(In((2, 3, 7)),)], dtypes=("int64", "bool"), differentiable=False),
]

# --- linear algebra on LAPACK (ops/linalg.cpp; the rest of rill.linalg is composed of these) -------------------
SQUARE = [(In((4, 4)),), (In((2, 3, 3)),), (In((4, 4), "t"),)]


def spd(m, x):
    """A symmetric positive-definite matrix made of x (its gradient flows back to x)."""
    return m.matmul(x, x.mT) + 4 * m.eye(x.shape[-1], dtype=x.dtype)


CASES += [
    case("linalg_solve", lambda m, a, b: m.linalg.solve(a + 4 * m.eye(4, dtype=a.dtype), b),
         [(In((4, 4)), In((4, 2))), (In((2, 4, 4)), In((4,))), (In((4, 4), "t"), In((3, 4, 1)))]),
    case("linalg_inv", lambda m, a: m.linalg.inv(a + 4 * m.eye(a.shape[-1], dtype=a.dtype)), SQUARE),
    case("linalg_slogdet", lambda m, a: m.linalg.slogdet(a).logabsdet + m.linalg.det(a), SQUARE),
    case("linalg_cholesky", lambda m, a: m.linalg.cholesky(spd(m, a)) + m.linalg.cholesky(spd(m, a), upper=True),
         SQUARE),
    case("linalg_eigh", lambda m, a: m.linalg.eigh(spd(m, a))[1].abs() + m.linalg.eigvalsh(spd(m, a)).unsqueeze(-1),
         SQUARE),
    case("linalg_svd", lambda m, a: (lambda r: m.cat([r[0].abs().flatten(), r[1].flatten(), r[2].abs().flatten()]))(
        m.linalg.svd(a, full_matrices=False)), [(In((4, 3)),), (In((2, 3, 5)),), (In((4, 4), "t"),)]),
    case("linalg_qr", lambda m, a: m.cat([t.flatten() for t in m.linalg.qr(a)]),
         [(In((5, 3)),), (In((3, 5)),), (In((4, 4), "t"),)]),
    case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
        a.triu() + 4 * m.eye(4, dtype=a.dtype), b, upper=True) + m.linalg.solve_triangular(
        a.tril() + 4 * m.eye(4, dtype=a.dtype), b.mT, upper=False, left=False, unitriangular=True).mT,
         [(In((4, 4)), In((4, 3))), (In((4, 4), "t"), In((2, 4, 3)))]),
    case("linalg_lu_factor", lambda m, a: m.linalg.lu_factor(a).LU,
         [(In((4, 4)),), (In((5, 3)),), (In((2, 3, 5)),)]),
    case("linalg_lu_pivots", lambda m, a: m.linalg.lu(a).P, [(In((4, 4)),), (In((5, 3)),)], differentiable=False),
    case("geqrf", lambda m, a: m.cat([t.flatten() for t in m.geqrf(a)]), [(In((5, 3)),), (In((2, 3, 4)),)],
         differentiable=False),
    case("linalg_ldl", lambda m, a, b: (lambda f: m.cat([f.LD.flatten(),
                                                        m.linalg.ldl_solve(f.LD, f.pivots, b).flatten()]))(
        m.linalg.ldl_factor(a + a.mT)),
         [(In((4, 4)), In((4, 2))), (In((4, 4), "t"), In((2, 4, 3))), (In((2, 4, 4)), In((4, 1)))],
         differentiable=False),
]

# --- nn: 3-D and 1-D transposed convolution, circular padding (rill/nn/_convnd.py, compositions of the 2-D ops)
CASES += [
    case("conv3d", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
         [(In((2, 2, 3, 5, 4)), In((3, 2, 2, 2, 2)), In((3,)))]),
    case("conv3d_groups_dilation_same", lambda m, x, w: m.nn.functional.conv3d(x, w, groups=2, dilation=(2, 1, 1),
                                                                              padding="same"),
         [(In((1, 4, 5, 4, 4)), In((2, 2, 2, 2, 3))), (In((4, 5, 4, 4)), In((2, 2, 2, 2, 3)))]),
    case("conv_transpose1d", lambda m, x, w, b: m.nn.functional.conv_transpose1d(x, w, b, stride=2, padding=1,
                                                                                  output_padding=1, dilation=2),
         [(In((2, 4, 5)), In((4, 3, 3)), In((3,))), (In((4, 5)), In((4, 3, 3)), In((3,)))]),
    case("conv_transpose3d", lambda m, x, w, b: m.nn.functional.conv_transpose3d(x, w, b, stride=(2, 1, 2),
                                                                                  padding=(1, 0, 1), groups=2,
                                                                                  output_padding=(1, 0, 0)),
         [(In((2, 4, 3, 3, 2)), In((4, 1, 3, 2, 2)), In((2,)))]),
    case("pad_circular", lambda m, x: m.nn.functional.pad(x, (2, 1, -1, 2), mode="circular"),
         [(In((1, 2, 4, 5)),), (In((2, 4, 5)),)]),
    case("pad_circular_3d", lambda m, x: m.nn.functional.pad(x, (1, 1, 0, 2, 1, 0), mode="circular"),
         [(In((1, 2, 3, 3, 4)),)]),
]

# --- nn: 3-D pooling and adaptive max pooling (rill/nn/_poolnd.py, compositions)
VOLUME = [(In((2, 3, 5, 6, 4)),), (In((3, 4, 4, 5)),)]
CASES += [
    case("max_pool3d", lambda m, x: m.nn.functional.max_pool3d(x, 2), VOLUME),
    case("max_pool3d_pad_ceil_dilation", lambda m, x: m.nn.functional.max_pool3d(
        x, (3, 2, 2), (2, 1, 2), 1, dilation=(1, 2, 1), ceil_mode=True), VOLUME[:1]),
    case("max_pool3d_indices", lambda m, x: m.nn.functional.max_pool3d(x, 3, 2, 1, return_indices=True)[1],
         VOLUME, differentiable=False),
    case("avg_pool3d", lambda m, x: m.nn.functional.avg_pool3d(x, 3, 2, 1), VOLUME),
    case("avg_pool3d_ceil_exclude_pad", lambda m, x: m.nn.functional.avg_pool3d(
        x, (2, 3, 2), 2, (1, 1, 0), ceil_mode=True, count_include_pad=False), VOLUME[:1]),
    case("avg_pool3d_divisor", lambda m, x: m.nn.functional.avg_pool3d(x, 2, 1, divisor_override=3), VOLUME[:1]),
    case("adaptive_avg_pool3d", lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (3, None, 3)), VOLUME),
    case("adaptive_max_pool1d", lambda m, x: m.nn.functional.adaptive_max_pool1d(x, 3), [(In((2, 3, 7)),)]),
    case("adaptive_max_pool2d", lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (3, 4)), [(In((2, 3, 7, 5)),)]),
    case("adaptive_max_pool3d", lambda m, x: m.nn.functional.adaptive_max_pool3d(x, (2, 4, 3)), VOLUME),
    case("adaptive_max_pool3d_indices",
         lambda m, x: m.nn.functional.adaptive_max_pool3d(x, 3, return_indices=True)[1], VOLUME,
         differentiable=False),
]

# --- nn: unfold / fold (rill/nn/_poolnd.py, index_select and index_add)
CASES += [
    case("unfold", lambda m, x: m.nn.functional.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
         [(In((2, 3, 5, 6)),), (In((3, 4, 5)),)]),
    case("fold", lambda m, x: m.nn.functional.fold(x, (4, 5), 2, padding=1, stride=(1, 2)),
         [(In((2, 8, 15)),), (In((4, 15)),)]),
]

# --- special functions (ops/special.cpp) ------------------------------------------------------------------------
def ranged(specs, low, high):
    """specs with every input's values in [low, high)."""
    return [tuple(In(i.shape, i.view, low=low, high=high) for i in s) for s in specs]


def _degrees(specs):
    """(x, n) pairs: x in [-1.5, 1.5), n an int64 degree in [0, 12)."""
    return [(In(s[0].shape, s[0].view, low=-1.5, high=1.5), In(s[1].shape, integer=True, low=0, high=12))
            for s in specs if s[1].view is None]


_SPECIAL_NO_GRAD = [  # name, low, high; float32 only: PyTorch's float64 Bessel and Airy kernels are accurate to
    # 1e-10 or so (bessel_j0, j1, y1 to 2e-7 near x = 5.5), so tests/python/test_special.py checks float64 against
    # SciPy
    ("airy_ai", -12.0, 4.0), ("bessel_j0", -4.5, 4.5), ("bessel_j1", -4.5, 4.5), ("bessel_y0", 0.1, 30.0),
    ("bessel_y1", 0.1, 4.5), ("modified_bessel_i0", -40.0, 40.0), ("modified_bessel_i1", -40.0, 40.0),
    ("modified_bessel_k0", 0.05, 30.0), ("modified_bessel_k1", 0.05, 30.0), ("scaled_modified_bessel_k0", 0.05, 50.0),
    ("scaled_modified_bessel_k1", 0.05, 50.0), ("spherical_bessel_j0", -20.0, 20.0)]
_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
# Integer first operands (the incomplete gammas' a, zeta's s) carry no gradient: PyTorch has none for them.
_INT_FIRST = [(In((3, 4), integer=True, low=1, high=6), In((3, 4), low=0.1, high=9.0)),
              (In((3, 1), integer=True, low=1, high=6), In((4,), low=0.1, high=9.0))]

CASES += [
    case("digamma", lambda m, x: m.digamma(x) + x.digamma() * 0.5 + m.special.psi(x), ranged(UNARY, 0.2, 6.0),
         dtypes=ALL_FLOATS, grad_rtol=1e-8),
    case("digamma_negative", lambda m, x: m.special.digamma(x), ranged(UNARY[:2], -3.9, -3.1), grad_rtol=1e-8),
    case("lgamma", lambda m, x: m.lgamma(x) + x.lgamma() + m.special.gammaln(x), ranged(UNARY, 0.2, 8.0),
         dtypes=ALL_FLOATS),
    case("lgamma_negative", lambda m, x: m.lgamma(x), ranged(UNARY[:2], -1.9, -1.1)),
    # (no polygamma(1) values in float64: PyTorch's trigamma is accurate to 5e-10 only)
    case("_polygamma", lambda m, x: m.polygamma(2, x) + x.polygamma(3) + m.special.polygamma(0, x) + m.polygamma(4, x),
         ranged(UNARY, 0.3, 5.0), grad_rtol=1e-8),
    case("polygamma_negative", lambda m, x: m.polygamma(2, x) + m.polygamma(3, x), ranged(UNARY[:2], -2.8, -2.2), grad_rtol=1e-8),
    case("mvlgamma", lambda m, x: m.mvlgamma(x, 3) + x.mvlgamma(p=1) + m.special.multigammaln(x, 2),
         ranged(UNARY, 1.2, 6.0), grad_rtol=1e-8),
    case("erfinv", lambda m, x: m.erfinv(x) + x.erfinv() + m.special.erfinv(x * 0.5), ranged(UNARY, -0.95, 0.95),
         dtypes=ALL_FLOATS),
    case("igamma", lambda m, a, x: m.igamma(a, x) + a.igammac(x) * 2 + m.special.gammainc(a, x * 3), _INT_FIRST),
    case("igammac", lambda m, a, x: m.igammac(a, x) + m.special.gammaincc(a, x * 0.5), _INT_FIRST),
    case("igamma_float", lambda m, a, x: m.igamma(a, x) + m.igammac(a, x), ranged(BINARY[:2], 0.1, 12.0),
         dtypes=ALL_FLOATS, differentiable=False),
    case("special_zeta", lambda m, s, q: m.special.zeta(s + 1, q) + m.special.zeta(s + 1, 2.5), _INT_FIRST),
    case("special_zeta_float", lambda m, s, q: m.special.zeta(s + 1.5, q) + m.special.zeta(3.0, q),
         ranged(BINARY[:2], 0.2, 5.0), differentiable=False),
    case("nextafter", lambda m, a, b: m.nextafter(a, b) + a.nextafter(b * 2), BINARY, dtypes=ALL_FLOATS),
    case("frexp", lambda m, x: m.frexp(x)[0] + x.frexp().exponent + m.frexp(x * 1e3).mantissa, UNARY,
         dtypes=ALL_FLOATS),
    case("special_erfcx", lambda m, x: m.special.erfcx(x), ranged(UNARY, -3.0, 30.0)),
    case("special_log_ndtr", lambda m, x: m.special.log_ndtr(x), ranged(UNARY, -20.0, 6.0)),
    case("special_ndtri", lambda m, x: m.special.ndtri(x), ranged(UNARY, 0.01, 0.99)),
    case("special_i1", lambda m, x: m.special.i1(x), ranged(UNARY, -12.0, 12.0)),
    case("special_i1e", lambda m, x: m.special.i1e(x), ranged(UNARY, -40.0, 40.0)),
    case("special_i0e", lambda m, x: m.special.i0e(x), ranged(UNARY, -40.0, 40.0)),
    case("special_int_to_float", lambda m, x: m.digamma(x) + m.lgamma(x) + m.special.i1(x) + m.special.erfcx(x)
         + m.special.bessel_j0(x) + m.special.legendre_polynomial_p(x * 0.1, 3),
         [(In((3, 4), integer=True, low=1, high=9),)], dtypes=("int64",), differentiable=False),
]
CASES += [case(f"special_{name}", lambda m, x, name=name: getattr(m.special, name)(x), ranged(UNARY[:4], lo, hi),
               dtypes=("float32",), differentiable=False) for name, lo, hi in _SPECIAL_NO_GRAD]
CASES += [case(f"special_{name}", lambda m, x, n, name=name: getattr(m.special, name)(x, n) +
               getattr(m.special, name)(x, 3), _degrees(BINARY[:3]), differentiable=False) for name in _POLYNOMIALS]
CASES += [case("as_strided", lambda m, x: m.as_strided(x, (2, 2), (1, 2), 1) + x.as_strided((2, 2), (1, 1), 2),
               [(In((3, 4)),), (In((5,)),)], dtypes=ALL_FLOATS)]
