"""Every row of op_cases.CASES against PyTorch: values, gradients (for a random output gradient), and, in
float64, gradients against central finite differences of rill's own forward (an oracle independent of
both frameworks' backward formulas)."""
import numpy as np
import pytest
import torch

import rill
from conftest import TOLERANCES, assert_close, make_array
from op_cases import CASES, VIEWS

# Gradients of 16-bit inputs go through several rounded steps in rill (each op rounds) and fewer in
# torch (fused backward kernels computing in float32), so they are compared more loosely than values.
GRAD_TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (6e-2, 1e-2), "float32": (1e-4, 1e-5),
                   "float64": (1e-10, 1e-12)}


def params():
    for c in CASES:
        for dtype in c.dtypes:
            for i in range(len(c.specs)):
                yield pytest.param(c, dtype, i, id=f"{c.name}-{dtype}-{i}")


def base_arrays(spec, dtype, seed):
    arrays = []
    for k, inp in enumerate(spec):
        if inp.boolean:
            arrays.append(make_array(inp.shape, "bool", seed=seed + k))
        elif inp.integer:
            arrays.append(make_array(inp.shape, "int64", seed=seed + k, low=inp.low, high=inp.high))
        else:
            # float64 data so every dtype sees the same values (16-bit ones rounded once when converted)
            arrays.append(make_array(inp.shape, "float64", seed=seed + k, positive=inp.positive, low=inp.low,
                                     high=inp.high))
    return arrays


def is_float_input(inp):
    return not (inp.boolean or inp.integer)


def leaves_of(module, arrays, spec, dtype, requires_grad):
    out = []
    for a, inp in zip(arrays, spec):
        if module is torch:
            t = torch.tensor(a)
            t = t.to(getattr(torch, dtype)) if is_float_input(inp) else t
        else:
            t = rill.tensor(a)
            t = t.to(getattr(rill, dtype)) if is_float_input(inp) else t
        if requires_grad and is_float_input(inp):
            t.requires_grad_()
        out.append(t)
    return out


def laid_out(leaves, spec):
    return [VIEWS[inp.view](t) if inp.view else t for t, inp in zip(leaves, spec)]


def to_np64(t):
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return np.asarray(t.detach().double().numpy(), dtype=np.float64)


@pytest.mark.parametrize("case,dtype,spec_index", list(params()))
def test_op_parity(case, dtype, spec_index):
    spec = case.specs[spec_index]
    arrays = base_arrays(spec, dtype, seed=spec_index * 10 + 1)
    grad = case.differentiable
    r_leaves = leaves_of(rill, arrays, spec, dtype, grad)
    t_leaves = leaves_of(torch, arrays, spec, dtype, grad)
    r_out = case.rill_fn(*laid_out(r_leaves, spec))
    t_out = case.torch_fn(*laid_out(t_leaves, spec))
    assert_close(r_out.detach(), t_out.detach())
    if not grad:
        assert not r_out.requires_grad
        return
    assert r_out.requires_grad
    go = make_array(tuple(t_out.shape), "float64", seed=99)
    r_go = rill.tensor(go).to(r_out.dtype)
    t_go = torch.tensor(go).to(t_out.dtype)
    r_diff = [t for t, inp in zip(r_leaves, spec) if is_float_input(inp)]
    t_diff = [t for t, inp in zip(t_leaves, spec) if is_float_input(inp)]
    r_grads = rill.autograd.grad(r_out, r_diff, r_go, allow_unused=True)
    t_grads = torch.autograd.grad(t_out, t_diff, t_go, allow_unused=True)
    rtol, atol = GRAD_TOLERANCES[dtype]
    rtol = max(rtol, case.grad_rtol)
    for k, (rg, tg) in enumerate(zip(r_grads, t_grads)):
        if tg is None:
            assert rg is None or not rg.numpy().any(), f"input {k}: torch has no gradient, rill has {rg}"
            continue
        assert rg is not None, f"input {k}: rill has no gradient"
        assert_close(rg, tg, rtol=rtol, atol=atol)
    # Finite differences need a float64 result (a float32 one rounds away the perturbation).
    if dtype == "float64" and case.finite_differences and r_out.dtype == rill.float64:
        check_finite_differences(case, spec, arrays, go, r_grads)


def check_finite_differences(case, spec, arrays, go, grads, eps=1e-6):
    """grads[k] equals d(sum(out * go))/d(input k), estimated by central differences on each element."""
    def objective(arrs):
        with rill.no_grad():
            ts = [rill.tensor(a) for a in arrs]
            out = case.rill_fn(*laid_out(ts, spec))
            return float((to_np64(out) * go).sum())

    k = 0
    for i, inp in enumerate(spec):
        if not is_float_input(inp):
            continue
        numeric = np.zeros(arrays[i].shape)
        for idx in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (objective(plus) - objective(minus)) / (2 * eps)
        analytic = np.zeros(arrays[i].shape) if grads[k] is None else to_np64(grads[k])
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{case.name}: input {i} gradient vs finite differences")
        k += 1
