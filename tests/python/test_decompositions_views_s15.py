"""Decompositions unique up to a gauge, views into a larger storage, and torch modules passed as arguments:
rill against PyTorch, and the conformance harness's translation of each (tests/python/conformance/db_check.py)."""
import pathlib
import sys

import numpy as np
import pytest
import torch

import rill

sys.path.insert(0, str(pathlib.Path(__file__).parent / "conformance"))
import db_check  # noqa: E402
from conftest import same, to_rill  # noqa: E402


def same_up_to_column_signs(actual, expected, **tols):
    """actual's columns are expected's, each possibly negated."""
    a, e = actual.detach().numpy(), expected.detach().numpy()
    signs = np.sign((a * e).sum(-2, keepdims=True))
    assert np.all(signs != 0)
    np.testing.assert_allclose(a * signs, e, **tols)


# --- as_strided on a partial view ----------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [None, 0, 10])
def test_as_strided_of_a_partial_view_reads_its_storage(offset):
    base = torch.arange(20.0)
    view, rview = base[5:15].requires_grad_(), rill.arange(20.0)[5:15].requires_grad_()
    out, rout = view.as_strided((2, 2), (1, 2), offset), rview.as_strided((2, 2), (1, 2), offset)
    same(rout, out)
    (grad,) = torch.autograd.grad(out.sum(), view)
    rout.sum().backward()
    same(rview.grad, grad)


def test_harness_keeps_the_storage_of_a_view():
    base = torch.randn(20)
    view = base[5:15]
    r = db_check.to_rill(view, {})
    assert r.storage_offset() == 5
    same(r, view)
    same(r.as_strided((2, 2), (1, 2), 10), view.as_strided((2, 2), (1, 2), 10))
    t = torch.randn(4, 6)[:, ::2]  # a strided view keeps its strides
    r = db_check.to_rill(t, {})
    assert r.stride() == t.stride()
    same(r, t)


# --- as_strided_scatter's gradient ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, size, stride, offset", [((3, 3), (2, 2), (1, 2), 0), ((3, 3), (2, 2), (1, 2), 1),
                                                         ((16,), (2, 1, 1, 2), (1, 2, 4, 8), 0)])
def test_as_strided_scatter_grad_leaves_out_the_overwritten_region(shape, size, stride, offset):
    x, src = torch.randn(shape, dtype=torch.float64), torch.randn(size, dtype=torch.float64)
    rx, rsrc = to_rill(x).requires_grad_(), to_rill(src).requires_grad_()
    weights = torch.randn(x.numel(), dtype=torch.float64)
    out = rill.as_strided_scatter(rx, rsrc, size, stride, offset)
    (out.flatten() * to_rill(weights)).sum().backward()
    # d out / d input: the weights, zero where src overwrites; d out / d src: the weights src lands on
    expected_x = weights.clone()
    expected_x.as_strided(size, stride, offset).zero_()
    same(rx.grad, expected_x.reshape(shape))
    same(rsrc.grad, weights.as_strided(size, stride, offset))
    # the harness's reference for this op: central differences of PyTorch's forward, not PyTorch's backward
    x.requires_grad_()
    sample = type("Sample", (), dict(input=x, args=(src, size, stride), kwargs={"storage_offset": offset},
                                     output_process_fn_grad=staticmethod(lambda out: out)))
    op = type("Op", (), dict(op=staticmethod(torch.as_strided_scatter)))
    (numeric,) = db_check.finite_difference_grads(op, sample, [x])
    expected_sum = torch.ones(x.numel(), dtype=torch.float64)
    expected_sum.as_strided(size, stride, offset).zero_()
    same(numeric, expected_sum.reshape(shape), atol=1e-6)


# --- decompositions unique up to signs -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, uplo", [(torch.float32, "L"), (torch.float64, "U"), (torch.float32, "U")])
def test_eigh_matches_torch_up_to_eigenvector_signs(dtype, uplo):
    torch.manual_seed(0)
    a = torch.randn(3, 5, 5, dtype=dtype)
    w, v = torch.linalg.eigh(a, UPLO=uplo)
    rw, rv = rill.linalg.eigh(to_rill(a), UPLO=uplo)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    same(rw, w, **tol)
    same_up_to_column_signs(rv, v, **tol)


@pytest.mark.parametrize("shape, full", [((5, 3), True), ((3, 5), False), ((2, 4, 4), False)])
def test_svd_matches_torch_up_to_shared_signs(shape, full):
    torch.manual_seed(0)
    a = torch.randn(shape, dtype=torch.float64)
    u, s, vh = torch.linalg.svd(a, full_matrices=full)
    ru, rs, rvh = rill.linalg.svd(to_rill(a), full_matrices=full)
    k = s.shape[-1]
    same(rs, s, rtol=1e-10, atol=1e-12)
    ru_k, rvh_k = ru.numpy()[..., :k], rvh.numpy()[..., :k, :]
    signs = np.sign((ru_k * u.numpy()[..., :k]).sum(-2, keepdims=True))  # one sign per singular triplet
    np.testing.assert_allclose(ru_k * signs, u.numpy()[..., :k], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(rvh_k * np.swapaxes(signs, -1, -2), vh.numpy()[..., :k, :], rtol=1e-9, atol=1e-10)
    same(rill.tensor(ru_k) @ rill.tensor(rvh_k), u[..., :k] @ vh[..., :k, :], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_svd_lowrank_draws_torchs_sketch(dtype):
    # with M the rank-q result depends on the random sketch: rill draws the same numbers in the same order
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(6, 2, generator=gen, dtype=dtype) @ torch.randn(2, 5, generator=gen, dtype=dtype)
    m = torch.randn(6, 5, generator=gen, dtype=dtype)
    torch.manual_seed(42)
    u, s, v = torch.svd_lowrank(a, q=2, M=m)
    rill.manual_seed(42)
    ru, rs, rv = rill.svd_lowrank(to_rill(a), q=2, M=to_rill(m))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)
    same(rs, s, **tol)
    same(ru @ rv.mT, u @ v.mT, **tol)


def test_harness_seeds_rill_as_wrapper_set_seed_does():
    run = db_check.seeded(lambda: rill.randn(3))
    rill.manual_seed(7)
    first, again = run(), run()
    torch.manual_seed(42)
    same(first, torch.randn(3))
    same(again, first)
    same(rill.randn(2), (torch.manual_seed(7), torch.randn(2))[1])  # the caller's generator state is restored


# --- torch modules as arguments ------------------------------------------------------------------------------------

def test_harness_builds_pairwise_distance_from_torchs():
    tm = torch.nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True)
    rm = db_check.module_to_rill(tm)
    assert isinstance(rm, rill.nn.PairwiseDistance)
    a, p, n = (torch.randn(4, 3) for _ in range(3))
    same(rm(to_rill(a), to_rill(p)), tm(a, p), rtol=1e-6)
    loss = torch.nn.functional.triplet_margin_with_distance_loss(a, p, n, distance_function=tm, margin=0.5)
    rloss = rill.nn.functional.triplet_margin_with_distance_loss(to_rill(a), to_rill(p), to_rill(n),
                                                                 distance_function=rm, margin=0.5)
    same(rloss, loss, rtol=1e-6)


@pytest.mark.parametrize("norm_first, bias", [(False, True), (True, False)])
def test_harness_builds_transformer_encoder_from_torchs_layer(norm_first, bias):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation="gelu",
                                             norm_first=norm_first, bias=bias, dtype=torch.float64)
    rlayer = db_check.module_to_rill(layer)
    assert isinstance(rlayer, rill.nn.TransformerEncoderLayer)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    rencoder = rill.nn.TransformerEncoder(rlayer, 2, enable_nested_tensor=False)
    rencoder.load_state_dict({k: to_rill(v) for k, v in encoder.state_dict().items()})
    x = torch.randn(3, 2, 4, dtype=torch.float64)
    same(rlayer(to_rill(x)), layer(x), rtol=1e-10, atol=1e-12)
    same(rencoder(to_rill(x)), encoder(x), rtol=1e-10, atol=1e-12)
