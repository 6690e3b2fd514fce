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
    integer: bool = False    # an int64 input (no gradient), e.g. a where condition source
    boolean: bool = False    # a bool input (where's condition)


# Views that make an input non-contiguous; they work on rill and torch tensors alike.
VIEWS = {
    "t": lambda x: x.transpose(0, 1),
    "strided": lambda x: x[::2, 1::2],
    "expand": lambda x: x.expand(3, 4),
    "permute": lambda x: x.permute(2, 0, 1),
    "row": lambda x: x[1],
    "permute4": lambda x: x.permute(0, 3, 1, 2),
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
    case("max_pool2d", lambda m, x: m.nn.functional.max_pool2d(x, 2), [(In((2, 3, 6, 6)),), (In((3, 5, 5)),)]),
    case("max_pool2d_pad_ceil", lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
         [(In((2, 2, 8, 7)),)]),
    case("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         [(In((2, 3, 7, 7)),)]),
    case("adaptive_avg_pool2d", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
         [(In((2, 3, 7, 8)),)]),
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
