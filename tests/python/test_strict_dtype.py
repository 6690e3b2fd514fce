"""Strict dtype mode (docs/architecture.md §4): one test per forbidden implicit conversion and per allowed
case, the ways to turn the mode on (function, context manager, decorator, RILL_STRICT_DTYPE), its per-thread
scope, the inference cache (a result cached with the mode off must not let a strict call through), and
every row of the op-parity table run under the mode."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import rill
import rill.nn.functional as F
from op_cases import CASES
from test_op_parity import base_arrays, is_float_input, laid_out, leaves_of


@pytest.fixture
def strict():
    with rill.strict_dtype():
        yield


def raises_strict(fn, *fragments):
    """fn() raises TypeError mentioning strict dtype mode and each fragment."""
    with pytest.raises(TypeError, match="strict dtype mode") as e:
        fn()
    for f in fragments:
        assert f in str(e.value), f"{f!r} not in: {e.value}"
    return str(e.value)


f32 = lambda *s: rill.ones(*s)  # noqa: E731
f64 = lambda *s: rill.ones(*s, dtype=rill.float64)  # noqa: E731
i64 = lambda *s: rill.ones(*s, dtype=rill.int64)  # noqa: E731
mask = lambda *s: rill.ones(*s, dtype=rill.bool)  # noqa: E731


# --- turning it on and off ------------------------------------------------------------------------

def test_off_by_default_and_set_strict_dtype():
    assert not rill.is_strict_dtype()
    f32(3) + i64(3)  # promotes
    rill.set_strict_dtype(True)
    try:
        assert rill.is_strict_dtype()
        raises_strict(lambda: f32(3) + i64(3))
        rill.set_strict_dtype(False)  # pinned off for this thread, whatever the process default
        assert not rill.is_strict_dtype()
        f32(3) + i64(3)
    finally:
        rill.set_strict_dtype(None)  # back to the process default
    assert not rill.is_strict_dtype()


def test_context_manager_restores_and_nests():
    with rill.strict_dtype():
        assert rill.is_strict_dtype()
        with rill.strict_dtype(False):
            assert not rill.is_strict_dtype()
            f32(3) + i64(3)
        assert rill.is_strict_dtype()
    assert not rill.is_strict_dtype()
    # restored after an exception too
    with pytest.raises(TypeError):
        with rill.strict_dtype():
            f32(3) + i64(3)
    assert not rill.is_strict_dtype()


def test_decorator():
    @rill.strict_dtype()
    def f(a, b):
        assert rill.is_strict_dtype()
        return a + b

    @rill.strict_dtype
    def g(a, b):
        return a + b

    assert f(f32(2), f32(2)).dtype == rill.float32
    raises_strict(lambda: f(f32(2), i64(2)))
    raises_strict(lambda: g(f32(2), i64(2)))
    assert not rill.is_strict_dtype()


def test_per_thread():
    seen = {}

    def worker():
        seen["start"] = rill.is_strict_dtype()  # a new thread starts from the process default (off)
        rill.set_strict_dtype(True)
        seen["set"] = rill.is_strict_dtype()
        try:
            f32(2) + i64(2)
        except TypeError:
            seen["raised"] = True

    with rill.strict_dtype():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert rill.is_strict_dtype()
    assert seen == {"start": False, "set": True, "raised": True}
    assert not rill.is_strict_dtype()  # the thread's setting stayed in the thread
    f32(2) + i64(2)


def _run(code, **env):
    full_env = dict(os.environ, **env)
    full_env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(__file__), "..", "..", "python"),
                                              full_env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=120)


def test_environment_variable_sets_the_process_default():
    code = """
import threading, rill
assert rill.is_strict_dtype()
try:
    rill.ones(2) + rill.ones(2, dtype=rill.int64)
    raise SystemExit("no error")
except TypeError as e:
    assert "strict dtype mode" in str(e), e
out = {}
t = threading.Thread(target=lambda: out.setdefault("thread", rill.is_strict_dtype()))
t.start(); t.join()
assert out["thread"], out
rill.set_strict_dtype(False)
assert (rill.ones(2) + rill.ones(2, dtype=rill.int64)).dtype == rill.float32
rill.set_strict_dtype(None)  # back to the process default
assert rill.is_strict_dtype()
print("ok")
"""
    r = _run(code, RILL_STRICT_DTYPE="1")
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
    r = _run("import rill; assert not rill.is_strict_dtype(); print('ok')", RILL_STRICT_DTYPE="0")
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_env_override_at_run_time():
    assert not rill.is_strict_dtype()
    rill.set_env_override("RILL_STRICT_DTYPE", "1")
    try:
        assert rill.is_strict_dtype()
        with rill.strict_dtype(False):  # a thread's own setting wins over the process default
            assert not rill.is_strict_dtype()
    finally:
        rill.set_env_override("RILL_STRICT_DTYPE", None)
    assert not rill.is_strict_dtype()


def test_listed_in_env_knobs():
    assert any(k[0] == "RILL_STRICT_DTYPE" for k in rill.env_knobs())


# --- the inference cache ----------------------------------------------------------------------------

def test_cached_inference_does_not_bypass_strict_mode():
    """An op inferred (and cached) with the mode off still raises under it, and vice versa."""
    a, b = rill.ones(5, 7), rill.ones(5, 7, dtype=rill.float64)
    n = rill.ones(5, 7, dtype=rill.int16)
    for _ in range(2):
        assert (a * b).dtype == rill.float64          # cached, mode off
        assert (n * 2.5).dtype == rill.float32
        assert rill.sqrt(n).dtype == rill.float32
        with rill.strict_dtype():
            raises_strict(lambda: a * b, "float32", "float64")
            raises_strict(lambda: n * 2.5, "int16", "Python float")
            raises_strict(lambda: rill.sqrt(n), "int16")
            assert (a * a).dtype == rill.float32      # same-dtype results are cached and allowed
        assert (a * b).dtype == rill.float64          # and the mode off works again


# --- forbidden: every implicit conversion raises TypeError -------------------------------------------

def test_message_names_op_dtypes_and_fix(strict):
    msg = raises_strict(lambda: rill.add(f32(3), i64(3)))
    assert msg == ("[add] strict dtype mode: operands are float32 and int64; convert explicitly, e.g. "
                   "other.to(rill.float32)"), msg
    msg = raises_strict(lambda: f64(3) * f32(3))
    assert msg.startswith("[mul] strict dtype mode: operands are float64 and float32;") and \
        "other.to(rill.float64)" in msg, msg


@pytest.mark.parametrize("a,b", [("float32", "int64"), ("float32", "float64"), ("float16", "bfloat16"),
                                 ("int32", "int64"), ("uint8", "int8"), ("bool", "int64"), ("float16", "float32")])
def test_mixed_dtype_tensor_operands(strict, a, b):
    x, y = rill.ones(3, dtype=getattr(rill, a)), rill.ones(3, dtype=getattr(rill, b))
    for fn in (lambda: x + y, lambda: y * x, lambda: rill.maximum(x, y), lambda: x == y):
        raises_strict(fn, a, b)


def test_mixed_with_zero_dim_tensor(strict):
    raises_strict(lambda: f32(3) * rill.tensor(2.0, dtype=rill.float64), "float32", "float64")
    raises_strict(lambda: i64(3) + rill.tensor(2, dtype=rill.int32), "int64", "int32")
    raises_strict(lambda: rill.tensor(1.0) + rill.tensor(2), "float32", "int64")


def test_mixed_where_cat_clamp_lerp(strict):
    raises_strict(lambda: rill.where(mask(3), f32(3), i64(3)), "[where]")
    raises_strict(lambda: rill.cat([f32(2), f64(2)]), "[cat]", "tensors[0].to(rill.float64)")
    raises_strict(lambda: rill.clamp(f32(3), i64(3), f32(3)), "[clamp]")
    raises_strict(lambda: rill.addcmul(f32(3), f64(3), f32(3)), "[addcmul]")
    raises_strict(lambda: rill.remainder(i64(3), rill.ones(3, dtype=rill.int32)), "[remainder]")
    raises_strict(lambda: rill.bitwise_and(i64(3), mask(3)), "[bitwise_and]")


def test_int_true_division(strict):
    raises_strict(lambda: i64(3) / i64(3), "[div]", "int64", "float32", "floor_divide")
    raises_strict(lambda: i64(3) / 2, "[div_scalar]", "int64")
    raises_strict(lambda: 2 / i64(3), "int64")
    raises_strict(lambda: mask(3) / mask(3), "bool")
    raises_strict(lambda: rill.atan2(i64(3), i64(3)), "[atan2]")


@pytest.mark.parametrize("op", ["sqrt", "exp", "log", "sigmoid", "tanh", "sin", "rsqrt", "reciprocal"])
def test_int_to_float_unary(strict, op):
    raises_strict(lambda: getattr(rill, op)(i64(3)), f"[{op}]", "int64", "float32", ".to(rill.float32)")
    raises_strict(lambda: getattr(rill, op)(mask(3)), "bool")


def test_int_mean_and_logsumexp(strict):
    with pytest.raises(TypeError, match="mean"):  # an error in every mode (as in PyTorch)
        i64(3).mean()
    raises_strict(lambda: rill.logsumexp(i64(2, 3), 1), "[logsumexp]")


def test_python_float_with_int_tensor(strict):
    raises_strict(lambda: i64(3) * 1.5, "int64", "Python float", "input.to(rill.float32)", "int number")
    raises_strict(lambda: i64(3) + 0.5, "Python float")
    raises_strict(lambda: 1.5 - i64(3), "Python float and int64")
    raises_strict(lambda: i64(3) < 0.5, "[lt_scalar]")
    raises_strict(lambda: i64(3) ** 0.5, "[pow_scalar]")
    raises_strict(lambda: i64(3).clamp(0, 1.5), "[clamp_scalar]")
    raises_strict(lambda: rill.where(mask(3), i64(3), 0.5), "[where]")


def test_python_int_with_bool_tensor(strict):
    raises_strict(lambda: mask(3) + 1, "bool", "Python int", "bool number")
    raises_strict(lambda: mask(3) * 2, "Python int")
    raises_strict(lambda: mask(3) == 1, "Python int")
    raises_strict(lambda: mask(3) + 1.5, "Python float")


def test_inplace_ops(strict):
    x = f32(3)
    raises_strict(lambda: x.add_(f64(3)), "[add]")
    with pytest.raises(TypeError, match="strict dtype mode"):
        x += f64(3)
    raises_strict(lambda: x.mul_(i64(3)), "[mul]")
    n = i64(3)
    raises_strict(lambda: n.add_(1.5), "Python float")
    raises_strict(lambda: n.div_(2), "[div_scalar]")
    with pytest.raises(TypeError, match="strict dtype mode"):
        n /= n
    np.testing.assert_array_equal(x.numpy(), [1, 1, 1])  # nothing was written
    np.testing.assert_array_equal(n.numpy(), [1, 1, 1])


def test_copy_(strict):
    raises_strict(lambda: f32(3).copy_(f64(3)), "[copy_]", "src is float64", "float32", "src.to(rill.float32)")
    raises_strict(lambda: f32(3).copy_(i64(3)), "[copy_]")


def test_setitem(strict):
    x = f32(4)
    raises_strict(lambda: x.__setitem__(0, f64(())), "[setitem]", "value.to(rill.float32)")
    raises_strict(lambda: x.__setitem__(slice(0, 2), f64(2)), "[setitem]")
    raises_strict(lambda: x.__setitem__(rill.tensor([0, 2]), f64(2)), "[setitem]")
    n = i64(4)
    raises_strict(lambda: n.__setitem__(0, 1.5), "[setitem]", "Python float", "int(value)")
    raises_strict(lambda: n.__setitem__(rill.tensor([0, 1]), 2.5), "[setitem]")
    raises_strict(lambda: mask(2).__setitem__(0, 1), "[setitem]", "Python int", "bool(value)")
    np.testing.assert_array_equal(x.numpy(), [1, 1, 1, 1])


def test_fill_and_masked_fill_and_index_put(strict):
    raises_strict(lambda: i64(3).fill_(1.5), "[fill_]")
    raises_strict(lambda: f32(3).fill_(f64(())), "[fill_]")
    raises_strict(lambda: i64(3).masked_fill(mask(3), 0.5), "[masked_fill]")
    raises_strict(lambda: f32(3).masked_fill_(mask(3), f64(())), "[masked_fill_]")
    raises_strict(lambda: f32(3).index_put_((rill.tensor([0]),), f64(1)), "[index_put_]")
    raises_strict(lambda: i64(3).scatter(0, rill.tensor([0]), 1.5), "[scatter]")


def test_out_argument(strict):
    out = f32(3)
    raises_strict(lambda: rill.add(f64(3), f64(3), out=out), "[add]", "float64", "float32")
    raises_strict(lambda: rill.mul(f32(3), f64(3), out=f64(3)), "[mul]")


def test_load_state_dict_of_another_dtype(strict):
    model = rill.nn.Linear(3, 2)
    state = {k: v.double() for k, v in model.state_dict().items()}
    raises_strict(lambda: model.load_state_dict(state), "[load_state_dict]", "weight", "float64", "float32",
                  ".to(rill.float32)")
    model.load_state_dict({k: v.float() for k, v in state.items()})  # explicit conversion: fine


def test_optimizer_gradient_of_another_dtype(strict):
    class Odd(rill.nn.Parameter):  # a parameter whose gradient comes back as float64
        grad = property(lambda self: rill.ones(3, dtype=rill.float64))

    for opt_cls in (rill.optim.SGD, rill.optim.Adam, rill.optim.AdamW, rill.optim.RMSprop):
        p = Odd(rill.zeros(3))
        opt = opt_cls([p], lr=0.1)
        raises_strict(opt.step, f"[{opt_cls.__name__}.step]", "float32", "float64", "p.grad.to(rill.float32)")


def test_optimizer_load_state_dict_of_another_dtype(strict):
    p = rill.zeros(3, requires_grad=True)
    opt = rill.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = rill.ones(3)
    opt.step()
    state = opt.state_dict()
    state["state"][0]["momentum_buffer"] = state["state"][0]["momentum_buffer"].double()
    raises_strict(lambda: opt.load_state_dict(state), "[SGD.load_state_dict]", "float64", "float32")


def test_tensor_of_mixed_python_numbers(strict):
    raises_strict(lambda: rill.tensor([1, 2.5]), "[tensor]", "ints and floats", "dtype=rill.float32")
    raises_strict(lambda: rill.tensor([[1, 2], [3, 4.0]]), "[tensor]")
    raises_strict(lambda: rill.tensor([True, 2]), "bools and ints", "dtype=rill.int64")


# --- allowed: explicit conversions and contracts ------------------------------------------------------

def test_explicit_conversions_allowed(strict):
    x, n = f32(3), i64(3)
    for t, dt in [(n.to(rill.float32), rill.float32), (n.float(), rill.float32), (x.long(), rill.int64),
                  (x.double(), rill.float64), (x.half(), rill.float16), (x.bfloat16(), rill.bfloat16),
                  (x.to(n), rill.int64), (x.type_as(n), rill.int64), (mask(3).int(), rill.int32)]:
        assert t.dtype == dt
    assert (n.float() / 2).dtype == rill.float32
    assert (x + n.to(rill.float32)).dtype == rill.float32


def test_dtype_arguments_allowed(strict):
    n = i64(2, 3)
    assert n.sum(dtype=rill.float64).dtype == rill.float64
    assert n.mean(dtype=rill.float32).dtype == rill.float32
    assert rill.cumsum(n, 1, dtype=rill.float32).dtype == rill.float32
    assert F.softmax(f32(2, 3), -1, dtype=rill.float64).dtype == rill.float64
    assert rill.zeros(3, dtype=rill.int8).dtype == rill.int8
    assert rill.full((2,), 1.5, dtype=rill.float16).dtype == rill.float16
    assert rill.full((2,), 1, dtype=rill.float32).dtype == rill.float32
    assert rill.tensor([1, 2.5], dtype=rill.float32).dtype == rill.float32
    assert rill.tensor([1.0, 2.5]).dtype == rill.float32 and rill.tensor([1, 2]).dtype == rill.int64
    assert rill.tensor(np.array([1, 2.5])).dtype == rill.float64  # a numpy array has one dtype already
    assert rill.arange(0, 1, 0.25).dtype == rill.float32


def test_contract_dtypes_allowed(strict):
    logits = rill.randn(4, 5, requires_grad=True)
    target = rill.tensor([0, 3, 1, 4])
    loss = F.cross_entropy(logits, target) + F.nll_loss(F.log_softmax(logits, 1), target)
    loss.backward()
    assert logits.grad.dtype == rill.float32
    x = rill.randn(3, 4)
    assert x.masked_fill(x > 0, 0.0).dtype == rill.float32
    assert x.gather(1, rill.tensor([[0], [1], [2]])).dtype == rill.float32
    assert x.index_select(0, rill.tensor([0, 2])).dtype == rill.float32
    assert F.embedding(rill.tensor([1, 2]), x).dtype == rill.float32
    assert rill.where(x > 0, x, rill.zeros_like(x)).dtype == rill.float32
    assert F.one_hot(rill.tensor([0, 2]), 3).dtype == rill.int64
    assert x.any().dtype == rill.bool and x.all(1).dtype == rill.bool


def test_comparisons_allowed(strict):
    x, n = rill.randn(5), rill.tensor([1, 2, 3, 4, 5])
    assert (x > 0).dtype == rill.bool and (x >= 0.5).dtype == rill.bool
    assert (n == 3).dtype == rill.bool and (n == n).dtype == rill.bool
    assert (x == x).dtype == rill.bool
    accuracy = (n.argmax() == n.argmax()).float().mean()
    assert accuracy.item() == 1.0


def test_python_numbers_of_the_same_or_lower_category_allowed(strict):
    x, n, m, h = f32(3), i64(3), mask(3), rill.ones(3, dtype=rill.float16)
    assert (x * 2.5).dtype == rill.float32 and (2.5 * x).dtype == rill.float32
    assert (x + 1).dtype == rill.float32 and (1 - x).dtype == rill.float32  # an int with a float tensor
    assert (n + 3).dtype == rill.int64 and (n * True).dtype == rill.int64
    assert (m & True).dtype == rill.bool and (m | False).dtype == rill.bool
    assert (h * 0.5).dtype == rill.float16 and (h / 2).dtype == rill.float16
    assert (x ** 2).dtype == rill.float32 and (n ** 2).dtype == rill.int64
    assert (n // 2).dtype == rill.int64 and (n % 2).dtype == rill.int64
    assert x.clamp(0, 1).dtype == rill.float32 and n.clamp(0, 1).dtype == rill.int64
    x.add_(1).mul_(0.5)
    x[0] = 3
    n[0] = 7
    m[1] = False
    x.fill_(2)


def test_integer_sums_and_indices_allowed(strict):
    m = rill.tensor([True, False, True])
    assert m.sum().dtype == rill.int64 and m.sum().item() == 2  # counting a mask
    assert rill.tensor([1, 2], dtype=rill.int32).sum().dtype == rill.int64
    assert rill.randn(3, 4).argmax(1).dtype == rill.int64


def test_same_dtype_inplace_and_copy_allowed(strict):
    x, y = rill.randn(3), rill.randn(3)
    x.add_(y).mul_(y).copy_(y)
    x[0] = y[1]
    x[rill.tensor([0, 1])] = y[:2]
    p = rill.zeros(3, requires_grad=True)
    p.grad = rill.ones(3)
    with rill.no_grad():
        p.add_(p.grad, alpha=-0.1)


def test_gradients_of_explicitly_converted_graphs_allowed(strict):
    """Gradient rules convert gradients back to their inputs' dtypes; that is rill's doing, not the user's."""
    x = rill.randn(3, requires_grad=True)
    y = (x.double() * rill.randn(3, dtype=rill.float64)).sum()
    y.backward()
    assert x.grad.dtype == rill.float32
    h = rill.randn(4, 3, dtype=rill.bfloat16, requires_grad=True)
    F.linear(h, rill.randn(2, 3, dtype=rill.bfloat16)).sum().backward()
    assert h.grad.dtype == rill.bfloat16


def test_training_step_under_strict(strict):
    rill.manual_seed(0)
    model = rill.nn.Sequential(rill.nn.Linear(4, 8), rill.nn.ReLU(), rill.nn.LayerNorm(8), rill.nn.Linear(8, 3))
    opt = rill.optim.Adam(model.parameters(), lr=1e-2)
    x, y = rill.randn(16, 4), rill.randint(0, 3, (16,))
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert loss.dtype == rill.float32


# --- the op table under strict mode -------------------------------------------------------------------

# Rows that convert on purpose: mixed operands or int -> float results are their point (unary_int_to_float,
# atan2_ints, logsumexp_int, clamp_ints' float bound), or they multiply by a bool mask (x * (x.abs() < 1) in
# prod_zeros / cumprod_zeros) or add an int32 to an int64 (any_all's .int() + .int().sum()).
CONVERTING_ROWS = {"mixed_dtypes", "cat_promote", "unary_int_to_float", "atan2_ints", "logsumexp_int", "clamp_ints",
                   "prod_zeros", "prod_zeros_dim0", "prod_zeros_all", "cumprod_zeros", "cumprod_zeros_dim0",
                   "any_all"}
# The special functions' rows with integer operands (the incomplete gammas' a, zeta's s, the polynomials' degree n,
# special_int_to_float) and frexp's mantissa + int32 exponent.
CONVERTING_ROWS |= {"igamma", "igammac", "special_zeta", "frexp", "special_int_to_float"} | {
    "special_" + kind for kind in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                                   "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                                   "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                                   "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                                   "laguerre_polynomial_l", "legendre_polynomial_p")}


def _rows():
    for c in CASES:
        dtype = "float32" if "float32" in c.dtypes else c.dtypes[0]
        yield pytest.param(c, dtype, id=c.name)


@pytest.mark.parametrize("case,dtype", list(_rows()))
def test_op_table_runs_under_strict_mode(case, dtype):
    """Every op-parity row, forward and backward, on inputs of one dtype: no conversion is implicit, so strict
    mode changes nothing (the rows that mix dtypes on purpose must raise)."""
    spec = case.specs[0]
    arrays = base_arrays(spec, dtype, seed=1)
    leaves = leaves_of(rill, arrays, spec, dtype, case.differentiable)
    with rill.strict_dtype():
        if case.name in CONVERTING_ROWS:
            with pytest.raises(TypeError, match="strict dtype mode"):
                case.rill_fn(*laid_out(leaves, spec))
            return
        out = case.rill_fn(*laid_out(leaves, spec))
        if case.differentiable and out.requires_grad:
            diff = [t for t, inp in zip(leaves, spec) if is_float_input(inp)]
            rill.autograd.grad(out, diff, rill.ones_like(out), allow_unused=True)


def test_modules_under_strict(strict):
    """nn modules' own code makes its conversions explicitly: a transformer layer with masks, embeddings,
    norms and losses run forward and backward under strict mode."""
    rill.manual_seed(0)
    layer = rill.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1,
                                            batch_first=True)
    emb = rill.nn.Embedding(10, 8, padding_idx=0)
    norm = rill.nn.BatchNorm1d(8)
    tokens = rill.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    padding = tokens == 0
    x = emb(tokens)
    causal = rill.arange(4).unsqueeze(0) > rill.arange(4).unsqueeze(1)  # bool: True = masked
    y = layer(x, src_key_padding_mask=padding, src_mask=causal)
    z = norm(y.reshape(-1, 8))
    loss = rill.nn.MSELoss()(z, rill.zeros_like(z)) + rill.nn.CrossEntropyLoss(label_smoothing=0.1)(
        z, rill.tensor([0, 1, 2, 3, 4, 5, 6, 7]))
    loss.backward()
    assert emb.weight.grad.dtype == rill.float32
    rill.nn.utils.clip_grad_norm_(list(layer.parameters()) + list(emb.parameters()), 1.0)
