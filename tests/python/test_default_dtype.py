"""rill.set_default_dtype / set_default_tensor_type as PyTorch's: Python floats, factories, float-valued ops on
integers, modules' parameters and repr follow the default; restoring it restores everything (the inference cache
keys on it)."""
import pytest
import torch

import rill

CASES = {
    "tensor of floats": lambda L: L.tensor([1.5]),
    "zeros": lambda L: L.zeros(2),
    "ones": lambda L: L.ones(2),
    "empty": lambda L: L.empty(2),
    "rand": lambda L: L.rand(2),
    "randn": lambda L: L.randn(3),
    "arange of floats": lambda L: L.arange(0.0, 3.0),
    "full of a float": lambda L: L.full((2,), 1.5),
    "sqrt of ints": lambda L: L.sqrt(L.tensor([4])),
    "int tensor + float": lambda L: L.tensor([1]) + 1.5,
    "true division of ints": lambda L: L.tensor([3]) / L.tensor([2]),
    "mean of ints (float arg)": lambda L: L.tensor([1, 2]).float().mean(),
    "Linear weight": lambda L: L.nn.Linear(2, 2).weight,
    "Conv2d weight": lambda L: L.nn.Conv2d(1, 1, 2).weight,
    "float32 tensor stays": lambda L: L.tensor([1.5], dtype=L.float32) * 2.0,
}


@pytest.fixture
def restore():
    yield
    rill.set_default_dtype(rill.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("name", list(CASES))
def test_follows_default_like_torch(name, dtype, restore):
    want_before = str(CASES[name](torch).dtype).split(".")[-1]
    assert str(CASES[name](rill).dtype).split(".")[-1] == want_before  # warms the inference cache at float32
    rill.set_default_dtype(getattr(rill, dtype))
    torch.set_default_dtype(getattr(torch, dtype))
    assert rill.get_default_dtype() == getattr(rill, dtype)
    assert str(CASES[name](rill).dtype).split(".")[-1] == str(CASES[name](torch).dtype).split(".")[-1]
    rill.set_default_dtype(rill.float32)
    torch.set_default_dtype(torch.float32)
    assert str(CASES[name](rill).dtype).split(".")[-1] == want_before


def test_repr_and_tensor_type(restore):
    rill.set_default_tensor_type(rill.DoubleTensor)
    assert rill.get_default_dtype() == rill.float64
    assert repr(rill.tensor([1.5])) == "tensor([1.5000])"
    assert repr(rill.tensor([1.5], dtype=rill.float32)) == "tensor([1.5000], dtype=rill.float32)"
    rill.set_default_tensor_type("torch.FloatTensor")
    assert rill.get_default_dtype() == rill.float32


def test_bad_input(restore):
    with pytest.raises(TypeError, match="floating-point"):
        rill.set_default_dtype(rill.int64)
    with pytest.raises(TypeError, match="rill.dtype"):
        rill.set_default_dtype("float64")
    with pytest.raises(TypeError, match="floating-point CPU tensor types"):
        rill.set_default_tensor_type(rill.LongTensor)
    assert rill.get_default_dtype() == rill.float32
