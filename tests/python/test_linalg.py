"""rill.linalg against torch.linalg: values, gradients (float64), batching and broadcasting, and the errors
for bad input (src/rill/ops/linalg.cpp, autograd/linalg.cpp, python/rill/linalg.py). PyTorch's own sample
inputs check every function too (tests/python/conformance)."""
import numpy as np
import pytest
import torch

import rill


def pair(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=dtype)
    return rill.tensor(t.numpy()), t


def close(r, t, tol=1e-10):
    r = r.numpy() if hasattr(r, "numpy") else np.asarray(r)
    np.testing.assert_allclose(r, t.detach().numpy(), rtol=tol, atol=tol)


def spd(m, x):
    return m.matmul(x, x.mT) + x.shape[-1] * m.eye(x.shape[-1], dtype=x.dtype)


def grads(fn, *shapes, seed=0):
    """fn(m, *inputs) in rill and torch; returns each input's gradient pair."""
    rs, ts = [], []
    for i, s in enumerate(shapes):
        r, t = pair(*s, seed=seed + i)
        rs.append(r.requires_grad_())
        ts.append(t.requires_grad_())
    fn(rill, *rs).sum().backward()
    fn(torch, *ts).sum().backward()
    return [(r.grad, t.grad) for r, t in zip(rs, ts)]


@pytest.mark.parametrize("name, fn, shapes", [
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [(3, 4, 4), (3, 4, 2)]),
    ("solve_broadcast", lambda m, a, b: m.linalg.solve(a, b), [(4, 4), (2, 3, 4, 1)]),
    ("solve_vector", lambda m, a, b: m.linalg.solve(a, b), [(2, 4, 4), (2, 4)]),
    ("solve_left_false", lambda m, a, b: m.linalg.solve(a, b, left=False), [(4, 4), (3, 4)]),
    ("inv", lambda m, a: m.linalg.inv(a), [(2, 5, 5)]),
    ("det", lambda m, a: m.linalg.det(a), [(3, 4, 4)]),
    ("slogdet", lambda m, a: m.linalg.slogdet(a).logabsdet, [(4, 4)]),
    ("logdet_spd", lambda m, a: m.logdet(spd(m, a)), [(4, 4)]),
    ("cholesky", lambda m, a: m.linalg.cholesky(spd(m, a)), [(2, 4, 4)]),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky(spd(m, a), upper=True), [(4, 4)]),
    ("eigh", lambda m, a: m.linalg.eigh(spd(m, a)).eigenvectors.abs() + m.linalg.eigvalsh(spd(m, a)).unsqueeze(-1),
     [(2, 4, 4)]),
    ("svd_tall", lambda m, a: (lambda r: r.U.abs().sum() + r.S.sum() + r.Vh.abs().sum())(
        m.linalg.svd(a, full_matrices=False)), [(2, 5, 3)]),
    ("svd_wide", lambda m, a: (lambda r: r.U.abs().sum() + r.S.sum() + r.Vh.abs().sum())(
        m.linalg.svd(a, full_matrices=False)), [(3, 5)]),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [(4, 3)]),
    ("qr_tall", lambda m, a: sum(t.sum() for t in m.linalg.qr(a)), [(2, 5, 3)]),
    ("qr_wide", lambda m, a: sum(t.sum() for t in m.linalg.qr(a)), [(3, 5)]),
    ("lu_factor_square", lambda m, a: m.linalg.lu_factor(a).LU, [(4, 4)]),
    ("lu_factor_tall", lambda m, a: m.linalg.lu_factor(a).LU, [(5, 3)]),
    ("lu_factor_wide", lambda m, a: m.linalg.lu_factor(a).LU, [(3, 5)]),
    ("lu", lambda m, a: sum(t.sum() for t in m.linalg.lu(a)), [(2, 4, 4)]),
    ("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), [(4, 4), (4, 2)]),
    ("lu_solve_adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),
     [(4, 4), (4, 2)]),
    ("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a.triu() + 4 * m.eye(4, dtype=a.dtype), b,
                                                                   upper=True), [(4, 4), (4, 3)]),
    ("solve_triangular_right_unit", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                              unitriangular=True), [(4, 4), (3, 4)]),
    ("pinv", lambda m, a: m.linalg.pinv(a), [(5, 3)]),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [(6, 3), (6, 2)]),
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [(2, 4, 4)]),
    ("matrix_power_negative", lambda m, a: m.linalg.matrix_power(a + 4 * m.eye(3, dtype=a.dtype), -3), [(3, 3)]),
    ("matrix_norm_nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), [(2, 4, 3)]),
    ("matrix_norm_2", lambda m, a: m.linalg.matrix_norm(a, 2), [(4, 3)]),
    ("cond", lambda m, a: m.linalg.cond(a), [(4, 4)]),
    ("cholesky_solve", lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(spd(m, a))), [(4, 4), (4, 2)]),
    ("cholesky_inverse", lambda m, a: m.cholesky_inverse(m.linalg.cholesky(spd(m, a))), [(4, 4)]),
    ("householder_product", lambda m, a, t: m.linalg.householder_product(a, t), [(5, 3), (3,)]),
])
def test_values_and_gradients_equal_torch(name, fn, shapes):
    inputs = [pair(*s, seed=i) for i, s in enumerate(shapes)]
    close(fn(rill, *[r for r, _ in inputs]), fn(torch, *[t for _, t in inputs]))
    for g_r, g_t in grads(fn, *shapes):
        close(g_r, g_t, 1e-8)


def test_float32_factorizations_equal_torch():
    r, t = pair(3, 5, 5, dtype=torch.float32)
    close(rill.linalg.inv(r), torch.linalg.inv(t), 1e-3)
    close(rill.linalg.det(r), torch.linalg.det(t), 1e-3)
    close(rill.linalg.svdvals(r), torch.linalg.svdvals(t), 1e-4)
    close(rill.linalg.qr(r).R, torch.linalg.qr(t).R, 1e-4)
    close(rill.linalg.cholesky(spd(rill, r)), torch.linalg.cholesky(spd(torch, t)), 1e-4)


def test_named_results_and_the_torch_level_forms():
    r, t = pair(4, 4)
    assert rill.linalg.slogdet(r)._fields == ("sign", "logabsdet")
    assert rill.linalg.svd(r)._fields == ("U", "S", "Vh")
    U, S, V = rill.svd(r)  # torch.svd gives V, not Vh
    close(rill.matmul(U * S.unsqueeze(-2), V.mT), t)
    close(r.inverse(), t.inverse())
    close(r.det(), t.det())
    close(rill.pinverse(r), torch.pinverse(t))
    P, L, Uf = rill.lu_unpack(*rill.linalg.lu_factor(r))
    close(rill.matmul(P, rill.matmul(L, Uf)), t)


def test_singular_and_empty_matrices():
    A = rill.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=rill.float64)
    sign, logabsdet = rill.linalg.slogdet(A)
    assert sign.item() == 0 and logabsdet.item() == float("-inf")
    assert rill.linalg.det(A).item() == 0
    assert rill.linalg.inv_ex(A).info.item() > 0
    with pytest.raises(RuntimeError, match="singular"):
        rill.linalg.inv(A).numpy()
    with pytest.raises(RuntimeError, match="singular"):
        rill.linalg.solve(A, rill.ones(2, dtype=rill.float64)).numpy()
    assert rill.linalg.matrix_rank(A).item() == 1
    empty = rill.zeros(0, 0, dtype=rill.float64)
    assert rill.linalg.det(empty).item() == 1
    assert rill.linalg.inv(empty).shape == (0, 0)
    assert rill.linalg.svd(rill.zeros(3, 0, dtype=rill.float64)).U.shape == (3, 3)


def test_bad_input_raises_clear_errors():
    with pytest.raises(RuntimeError, match="square"):
        rill.linalg.inv(rill.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        rill.linalg.det(rill.ones(3))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        rill.linalg.inv(rill.ones(2, 2, dtype=rill.int64))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        rill.linalg.svd(rill.ones(2, 2, dtype=rill.float16))
    with pytest.raises(RuntimeError, match="positive-definite"):
        rill.linalg.cholesky(-rill.eye(3)).numpy()
    assert rill.linalg.cholesky_ex(-rill.eye(3)).info.item() == 1
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        rill.linalg.solve(rill.eye(3), rill.ones(4, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        rill.linalg.solve(rill.eye(3), rill.ones(3, 2, dtype=rill.float64))
    with pytest.raises(RuntimeError, match="UPLO"):
        rill.linalg.eigh(rill.eye(3), UPLO="X")
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        rill.linalg.qr(rill.eye(3), mode="full")
    with pytest.raises(NotImplementedError, match="complex"):
        rill.linalg.eig(rill.eye(3))
    with pytest.raises(RuntimeError, match="mode='r'"):
        rill.linalg.qr(rill.eye(3).requires_grad_(), mode="r").R.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ldl_factor_and_solve_equal_torch(dtype):
    g = torch.Generator().manual_seed(3)
    a = torch.randn(3, 6, 6, generator=g, dtype=dtype)
    a = a + a.mT
    a[1, 0, 0] = a[1, 1, 1] = 0  # forces 2 x 2 blocks of D: negative pivots
    b = torch.randn(6, 2, generator=g, dtype=dtype)
    LD, pivots, info = torch.linalg.ldl_factor_ex(a)
    r = rill.linalg.ldl_factor_ex(rill.tensor(a.numpy()), hermitian=True)
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    close(r.LD, LD, tol)
    assert r.pivots.dtype == rill.int32 and (pivots < 0).any()
    np.testing.assert_array_equal(r.pivots.numpy(), pivots.numpy())
    np.testing.assert_array_equal(r.info.numpy(), info.numpy())
    r_LD, r_pivots = rill.linalg.ldl_factor(rill.tensor(a.numpy()))
    x = rill.linalg.ldl_solve(r_LD, r_pivots, rill.tensor(b.numpy()))  # B's batch dims broadcast
    close(x, torch.linalg.ldl_solve(LD, pivots, b), tol)
    close(x, torch.linalg.solve(a, b.expand(3, 6, 2)), 1e-8 if dtype == torch.float64 else 1e-3)


def test_ldl_errors_and_no_gradient():
    singular = rill.zeros(2, 3, 3)
    assert rill.linalg.ldl_factor_ex(singular).info.tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="exactly zero"):
        rill.linalg.ldl_factor(singular)
    with pytest.raises(RuntimeError, match="exactly zero"):
        rill.linalg.ldl_factor_ex(singular, check_errors=True)
    with pytest.raises(RuntimeError, match="square"):
        rill.linalg.ldl_factor(rill.zeros(2, 3))
    LD, pivots = rill.linalg.ldl_factor(rill.eye(3, dtype=rill.float64))
    b = rill.ones(3, 1, dtype=rill.float64)
    bad = pivots.clone()
    bad[0] = 7
    with pytest.raises(IndexError, match="out of range"):
        rill.linalg.ldl_solve(LD, bad, b).tolist()  # (the kernel checks them when it runs)
    bad[0] = -1
    with pytest.raises(RuntimeError, match="repeated"):
        rill.linalg.ldl_solve(LD, bad, b).tolist()
    with pytest.raises(RuntimeError, match="same dtype"):
        rill.linalg.ldl_solve(LD, pivots, b.float())
    with pytest.raises(RuntimeError, match="pivots.shape"):
        rill.linalg.ldl_solve(LD, pivots[:2], b)
    with pytest.raises(RuntimeError, match="Incompatible"):
        rill.linalg.ldl_solve(LD, pivots, rill.ones(2, 1, dtype=rill.float64))
    x = rill.eye(3, dtype=rill.float64).requires_grad_()
    assert not rill.linalg.ldl_factor(x).LD.requires_grad  # not differentiable, as in PyTorch
