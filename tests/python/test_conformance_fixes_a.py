"""Integer and 16-bit results that must match PyTorch's exactly: integer sums that wrap in their dtype
inside PyTorch's formulas, and the dtype of a reduction to a 0-dim size."""
import numpy as np
import pytest
import torch

import rill


def _pair(values, dtype):
    a = np.array(values, dtype=dtype)
    return torch.from_numpy(a.copy()), rill.tensor(a)


def _same(r, t):
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("call", [
    lambda m, y, x: m.trapezoid(y),
    lambda m, y, x: m.trapezoid(y, dx=2),
    lambda m, y, x: m.trapz(y, x),
    lambda m, y, x: m.trapezoid(y, x, dim=1),
    lambda m, y, x: m.cumulative_trapezoid(y),
    lambda m, y, x: m.cumulative_trapezoid(y, x),
    lambda m, y, x: m.cumulative_trapezoid(y, dx=3),
])
def test_trapezoid_uint8_wraps_like_torch(call):
    ty, ry = _pair([[100, 200, 3], [250, 40, 9]], np.uint8)
    tx, rx = _pair([4, 3, 1], np.uint8)  # diff(x) wraps too: 255, 254
    _same(call(rill, ry, rx), call(torch, ty, tx))


def test_trapezoid_empty_dim():
    _same(rill.trapezoid(rill.ones(2, 0)), torch.trapezoid(torch.ones(2, 0)))


@pytest.mark.parametrize("shape,size", [((), ()), ((3,), ()), ((2, 2), (1, 2)), ((2, 2), (2, 2))])
def test_sum_to_size_bool(shape, size):
    a = np.asarray(np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0)
    t, r = torch.from_numpy(a.copy()), rill.tensor(a)
    _same(r.sum_to_size(size), t.sum_to_size(size))
