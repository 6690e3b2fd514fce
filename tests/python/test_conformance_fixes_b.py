"""Argument forms and edge cases found by PyTorch's OpInfo/ModuleInfo samples, checked against PyTorch."""
import pytest
import torch

import rill
from conftest import same, to_rill


@pytest.mark.parametrize("args, dtype", [((True, 5), None), ((False, True, True), "float32"),
                                         ((-0.9, 2.1, 2.0), "uint8"), ((0.0, -8.000001, -4.0), "int64"),
                                         ((0.5, 7.9, 2.5), "int64"), ((1, 6, 2), "float32")])
def test_arange_bools_and_integer_dtypes(args, dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    rkw = {} if dtype is None else {"dtype": getattr(rill, dtype)}
    same(rill.arange(*args, **rkw), torch.arange(*args, **kw))


def test_einsum_integer_operand_summed_alone():
    a = torch.tensor([[[6, 8, 4], [3, 6, 9]]], dtype=torch.uint8)
    b = torch.tensor([4, 9, 3], dtype=torch.uint8)
    same(rill.einsum("...ik, ...j -> ij", to_rill(a), to_rill(b)), torch.einsum("...ik, ...j -> ij", a, b))
    same(rill.einsum("ij,j->i", to_rill(a[0]), to_rill(b)), torch.einsum("ij,j->i", a[0], b))


def test_linalg_vander_of_a_0d_tensor():
    x = torch.tensor(-0.5)
    same(rill.linalg.vander(to_rill(x), N=3), torch.linalg.vander(x, N=3))


def test_batch_norm_empty_1d_input():
    e = torch.tensor([])
    same(rill.nn.functional.batch_norm(to_rill(e), to_rill(e), to_rill(e), training=True),
         torch.nn.functional.batch_norm(e, e, e, training=True))
    with pytest.raises(ValueError):
        rill.nn.functional.batch_norm(rill.ones(3), rill.zeros(3), rill.ones(3))


def test_group_norm_empty_batch():
    x = torch.zeros(0, 6, 3)
    w, b = torch.randn(6), torch.randn(6)
    same(rill.nn.functional.group_norm(to_rill(x), 3, to_rill(w), to_rill(b)),
         torch.nn.functional.group_norm(x, 3, w, b))


@pytest.mark.parametrize("var_shape", [(4, 1, 5, 5), (4, 3, 5, 1), (4, 3, 5), (4, 3, 5, 5)])
def test_gaussian_nll_loss_var_shapes(var_shape):
    torch.manual_seed(0)
    x, y = torch.randn(4, 3, 5, 5), torch.randn(4, 3, 5, 5)
    var = torch.rand(var_shape) + 0.1
    same(rill.nn.functional.gaussian_nll_loss(to_rill(x), to_rill(y), to_rill(var)),
         torch.nn.functional.gaussian_nll_loss(x, y, var), rtol=1e-5)


def test_gaussian_nll_loss_bad_var_shape():
    with pytest.raises(ValueError, match="incorrect size"):
        rill.nn.functional.gaussian_nll_loss(rill.ones(4, 3), rill.ones(4, 3), rill.ones(4, 2))


def test_cov_float32_aweights_on_float64_input():
    torch.manual_seed(0)
    x = torch.randn(3, 2, dtype=torch.float64)
    aw = torch.tensor([0.3051, 0.9320])
    same(rill.cov(to_rill(x), aweights=to_rill(aw)), torch.cov(x, aweights=aw), rtol=1e-12)


def test_cov_float16_input_float32_aweights():
    torch.manual_seed(0)
    x, aw = torch.randn(3, 4).half(), torch.rand(4)
    same(rill.cov(to_rill(x), aweights=to_rill(aw)), torch.cov(x, aweights=aw), rtol=1e-3)


def test_batch_norm_and_group_norm_float16_computed_in_float32():
    torch.manual_seed(0)
    x = (torch.randn(5, 5, 5) * 8).half()
    w, b = torch.randn(5).half(), torch.randn(5).half()
    rm, rv = torch.randn(5).half(), torch.rand(5).half() + 0.5
    rrm, rrv = to_rill(rm), to_rill(rv)
    same(rill.nn.functional.batch_norm(to_rill(x), rrm, rrv, to_rill(w), to_rill(b), True, 0.5, 0.6),
         torch.nn.functional.batch_norm(x, rm, rv, w, b, True, 0.5, 0.6), rtol=0, atol=3e-3)
    same(rrm, rm, rtol=1e-3)
    same(rill.nn.functional.group_norm(to_rill(x), 5, to_rill(w), to_rill(b)),
         torch.nn.functional.group_norm(x.float(), 5, w.float(), b.float()).half(), rtol=0, atol=3e-3)


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv_gradient_of_a_rank_deficient_and_a_hermitian_input(hermitian):
    torch.manual_seed(0)
    a, b = torch.rand(6, 2, dtype=torch.float64).qr().Q, torch.rand(5, 2, dtype=torch.float64).qr().Q
    A = torch.randn(5, 5, dtype=torch.float64) if hermitian else a @ b.mT
    G = torch.randn(A.shape[1], A.shape[0], dtype=torch.float64)
    A.requires_grad_()
    (torch.linalg.pinv(A, hermitian=hermitian) * G).sum().backward()
    ra = to_rill(A).requires_grad_()
    x = rill.linalg.pinv(ra, hermitian=hermitian)
    same(x, torch.linalg.pinv(A, hermitian=hermitian), rtol=1e-10, atol=1e-12)
    (x * to_rill(G)).sum().backward()
    same(ra.grad, A.grad, rtol=1e-8, atol=1e-10)


def test_relu_gradient_passes_nan_and_lp_pool_with_negative_inputs():
    x = torch.tensor([float("nan"), 1.0, -1.0, 0.0], dtype=torch.float64, requires_grad=True)
    torch.relu(x).sum().backward()
    rx = to_rill(x).requires_grad_()
    rill.relu(rx).sum().backward()
    same(rx.grad, x.grad)
    torch.manual_seed(0)
    x = torch.randn(1, 3, 7, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.lp_pool1d(x, 1.5, 2).sum().backward()
    rx = to_rill(x).requires_grad_()
    rill.nn.functional.lp_pool1d(rx, 1.5, 2).sum().backward()
    same(rx.grad, x.grad)
