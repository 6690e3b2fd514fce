"""float16/bfloat16 results that follow PyTorch's CPU rounding (its reduced-precision arithmetic or its float32
accumulation), compared with torch."""
import pytest
import torch

import rill


def as_torch(x):
    return torch.from_numpy(x.to(rill.float32).numpy()).to(getattr(torch, str(x.dtype).split(".")[-1]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int16", "uint8"])
@pytest.mark.parametrize("start,end,steps", [(-2.0, 4, 50), (4.3, -3, 50), (50, -3, 50), (0, 1, 5000),
                                             (-100, 3, 3000), (1.5, 1.5, 7), (2, 9, 1), (0, 1, 0)])
def test_linspace_rounds_like_torch(dtype, start, end, steps):
    if dtype in ("int16", "uint8") and min(start, end) < 0:
        start, end = abs(start), abs(end)
    got = rill.linspace(start, end, steps, dtype=getattr(rill, dtype))
    want = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    assert got.dtype == getattr(rill, dtype)
    # 16-bit and integral values are PyTorch's exactly; float32 ones may differ in the last bit (its vector path)
    exact = dtype != "float32"
    torch.testing.assert_close(as_torch(got), want, rtol=0 if exact else None, atol=0 if exact else None)


def from_torch(t):
    return rill.from_numpy(t.float().numpy()).to(getattr(rill, str(t.dtype).split(".")[-1]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,dim", [((5, 5), 1), ((4, 40), -1), ((3, 7, 2), 1), ((6, 33), 0)])
def test_log_softmax_rounds_like_torch(dtype, shape, dim):
    torch.manual_seed(0)
    x = (torch.randn(shape) * 8).to(getattr(torch, dtype))
    got = as_torch(rill.log_softmax(from_torch(x), dim))
    want = torch.log_softmax(x, dim)
    if dim in (-1, len(shape) - 1):
        # the last dim: PyTorch rounds each row's sum and log to the dtype; rill matches it exactly
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("ord", [6, 2, 1, 0, 3.5, float("inf"), -float("inf")])
@pytest.mark.parametrize("shape,dim", [((), None), ((2,), None), ((5, 5), 1), ((5, 1), 1), ((3, 4), (0, 1))])
def test_vector_norm_accumulates_in_float32_like_torch(dtype, ord, shape, dim):
    torch.manual_seed(0)
    x = (torch.randn(shape) * 9).to(getattr(torch, dtype))
    if x.dim():
        x[0] = 0.0674  # a 6th power that float16 would flush to subnormals
    want = torch.linalg.vector_norm(x, ord, dim)
    got = rill.linalg.vector_norm(from_torch(x), ord, dim)
    assert got.dtype == getattr(rill, dtype)
    torch.testing.assert_close(as_torch(got), want)


def test_vector_norm_of_one_element_is_its_absolute_value():
    x = torch.tensor([[1e30], [-3e-30]])
    got = rill.linalg.vector_norm(from_torch(x), 2, dim=1)
    torch.testing.assert_close(as_torch(got), torch.linalg.vector_norm(x, 2, dim=1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ndtr_rounds_each_step_like_torch(dtype):
    torch.manual_seed(0)
    x = (torch.randn(2000) * 4).to(getattr(torch, dtype))
    got = rill.special.ndtr(from_torch(x))
    assert got.dtype == getattr(rill, dtype)
    # rtol: two float16 ulps, for erf values within rounding of a tie (PyTorch's vector erf rounds them the other
    # way); the tails, where each step's rounding decides the value, must agree to atol
    torch.testing.assert_close(as_torch(got), torch.special.ndtr(x), rtol=2e-3, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("n,bins,lo,hi", [(1, 10, 0, 0), (5, 100, 0, 10), (25, 100, 0, 0), (40, 7, -3, 2.5),
                                          (30, 3, 1, 1)])
def test_histc_bins_like_torch(dtype, n, bins, lo, hi):
    torch.manual_seed(0)
    x = (torch.randn(n) * 5).to(getattr(torch, dtype))
    x[0] = 7.3  # with min == max == 0 and n == 1: the one value's range is [x - 1, x + 1], x on a rounded edge
    got = rill.histc(from_torch(x), bins, lo, hi)
    assert got.dtype == getattr(rill, dtype)
    torch.testing.assert_close(as_torch(got), torch.histc(x, bins, lo, hi), rtol=0, atol=0)
