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
