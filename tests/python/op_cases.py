"""The op-parity table (issue 5): one row per op case, driving test_op_parity.py.

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


def same(fn):
    """The same lambda for both frameworks: fn(m, *inputs) with m the module (rill or torch)."""
    import rill
    import torch
    return (lambda *xs: fn(rill, *xs)), (lambda *xs: fn(torch, *xs))


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
    case("narrow", lambda m, x: x.narrow(0, 1, 2), [(In((3, 4)),)]),
    case("squeeze", lambda m, x: x.squeeze(), [(In((3, 1, 4)),)]),
    case("squeeze_dim", lambda m, x: x.squeeze(1), [(In((3, 1, 4)),)]),
    case("unsqueeze", lambda m, x: x.unsqueeze(-1), [(In((3, 4)),)]),
    case("flatten", lambda m, x: x.flatten(), [(In((2, 3, 4)),), (In((2, 3, 4), "permute"),)]),
    case("view_chain", lambda m, x: x.t()[1:].unsqueeze(0).expand(2, 3, 3).sum(0), [(In((3, 4)),)]),
    # --- composites ---
    case("mlp", lambda m, x, w, b: ((x @ w + b).relu() * (x @ w).sigmoid()).mean(),
         [(In((4, 3)), In((3, 5)), In((5,)))]),
    # --- nn: rill.nn.functional (ops-nn) -----------------------------------------------------------------
    *NN_CASES,
    # --- not differentiable ---
    case("eq", lambda m, a, b: a == b, BINARY[:2], differentiable=False),
    case("lt_scalar", lambda m, x: x < 0.5, UNARY[:2], differentiable=False),
    case("argmax", lambda m, x: x.argmax(1), [(In((3, 4)),)], differentiable=False),
]


def _setitem(a, b):
    h = a * 2
    h[1] = b
    h[0, 1:] = b[:3].exp()
    return h


def _mul_view(a, b):
    h = a * 1
    h[1:, 2:].mul_(b)
    return h
