"""Ops whose 16-bit or edge-case results now follow PyTorch's kernels exactly (session 15)."""
import numpy as np
import pytest
import torch

import rill


def _r(t):
    return rill.tensor(t.float().numpy()).to(getattr(rill, str(t.dtype).split(".")[-1]))


def _np(t):
    return t.float().numpy() if t.dtype in (rill.float16, rill.bfloat16) else t.numpy()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int64])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.2, 0.6), (0, 2)])
def test_addr_rounds_like_torch(dtype, beta, alpha):
    if not dtype.is_floating_point:
        beta, alpha = int(beta * 5), int(alpha * 5)
    g = torch.Generator().manual_seed(0)
    a, v1, v2 = (torch.randn(s, generator=g).mul(4).to(dtype) for s in ((5, 10), (5,), (10,)))
    expected = torch.addr(a, v1, v2, beta=beta, alpha=alpha)
    got = rill.addr(_r(a), _r(v1), _r(v2), beta=beta, alpha=alpha)
    if dtype == torch.float32:  # PyTorch's vector loop may fuse a multiply-add: within an ulp
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=3e-7, atol=0)
    else:
        np.testing.assert_array_equal(_np(got), expected.float().numpy() if dtype.is_floating_point
                                      else expected.numpy())
    inplace = _r(a)
    inplace.addr_(_r(v1), _r(v2), beta=beta, alpha=alpha)
    np.testing.assert_array_equal(_np(inplace), _np(got))


def test_addr_of_booleans():
    a = torch.tensor([[True, False], [False, False]])
    v1, v2 = torch.tensor([True, False]), torch.tensor([False, True])
    for beta, alpha in [(True, True), (False, True), (True, False)]:
        expected = torch.addr(a, v1, v2, beta=beta, alpha=alpha)
        got = rill.addr(rill.tensor(a.numpy()), rill.tensor(v1.numpy()), rill.tensor(v2.numpy()), beta=beta,
                        alpha=alpha)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_div_floor_is_python_floor_division(dtype):
    # 1.0 // 0.1 is 9 (floor(1.0 / 0.1) is 10); 16-bit quotients are floored before they are rounded
    a = torch.tensor([1.0, -7.28125, -3.015625, 5.0, -5.0, 0.0]).to(dtype)
    b = torch.tensor([0.1, 0.51953125, -0.0559, 0.0, 0.0, -2.0]).to(dtype)
    expected = torch.div(a, b, rounding_mode="floor")
    np.testing.assert_array_equal(_np(rill.div(_r(a), _r(b), rounding_mode="floor")), expected.float().numpy())
    x = _r(a)
    x.div_(_r(b), rounding_mode="floor")
    np.testing.assert_array_equal(_np(x), expected.float().numpy())


def test_div_floor_has_zero_gradients_even_at_a_zero_divisor():
    a = rill.tensor([1.0, -7.0, 5.0], dtype=rill.float64, requires_grad=True)
    b = rill.tensor([0.1, 0.5, 0.0], dtype=rill.float64, requires_grad=True)
    rill.div(a, b, rounding_mode="floor").sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0] and b.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_mean_adds_16_bit_slices_in_order(dtype, include_self):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 5, 5, generator=g).mul(3).to(dtype)
    src = torch.randn(5, 10, 5, generator=g).mul(3).to(dtype)
    index = torch.tensor([0, 2, 2, 4, 0, 1, 2, 0, 4, 4])
    expected = x.clone().index_reduce_(1, index, src, "mean", include_self=include_self)
    got = _r(x).index_reduce_(1, rill.tensor(index.numpy()), _r(src), "mean", include_self=include_self)
    np.testing.assert_array_equal(_np(got), expected.float().numpy())


@pytest.mark.parametrize("dtype", [rill.float16, rill.bfloat16])
def test_matrix_exp_in_16_bits_is_the_rounded_float64_result(dtype):
    # PyTorch's own 16-bit CPU matrix_exp is wrong (NaN, or 0 for a matrix near 1e-5; see TORCH_VALUES_WRONG in
    # tests/python/conformance/db_check.py): rill computes it in float32 and rounds once
    g = torch.Generator().manual_seed(2)
    for a in (torch.randn(3, 4, 4, generator=g, dtype=torch.float64), torch.full((2, 2), 1e-5, dtype=torch.float64)):
        expected = torch.linalg.matrix_exp(a)
        got = rill.linalg.matrix_exp(rill.tensor(a.numpy()).to(dtype)).float().numpy()
        np.testing.assert_allclose(got, expected.numpy(), rtol=2e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(4, 3, 8), (2, 4, 16, 32), (2, 2, 100, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_16_bit_attention_is_as_accurate_as_torch(dtype, shape, causal):
    # PyTorch computes 16-bit attention in float32 (its flash kernel rounds exp(s - max) to 16 bits before it
    # meets value): rill's error against float64 is at most PyTorch's, give or take rounding
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(*shape, generator=g).to(dtype) for _ in range(3))
    F = torch.nn.functional
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal).double()
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    got = rill.nn.functional.scaled_dot_product_attention(*(_r(t) for t in (q, k, v)), is_causal=causal)
    assert got.dtype == getattr(rill, str(dtype).split(".")[-1])
    rill_error = (torch.tensor(got.float().numpy()).double() - reference).abs().max().item()
    torch_error = (expected - reference).abs().max().item()
    assert rill_error <= 1.25 * torch_error + 1e-6, (rill_error, torch_error)
    if len(shape) == 3:  # PyTorch's math path: float32 throughout, one rounding
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_16_bit_k_dimensional_linear_cross_entropy_rounds_the_biased_logits_once():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(16, 2, generator=g).half()
    w, b = torch.randn(2, 1, 2, 1, 2, generator=g).half(), torch.randn(2, 1, 2, 1, generator=g).half()
    t = torch.randint(0, 2, (16, 1, 2, 1), generator=g)
    expected = torch.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, reduction="none")
    got = rill.nn.functional.linear_cross_entropy(_r(x), _r(w), rill.tensor(t.numpy()), linear_bias=_r(b),
                                                  reduction="none")
    np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
