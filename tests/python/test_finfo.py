"""rill.finfo / rill.iinfo equal torch's for every dtype, and reject the wrong kind of dtype."""
import pytest
import torch

import rill

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    r, t = rill.finfo(getattr(rill, name)), torch.finfo(getattr(torch, name))
    for field in ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]:
        assert getattr(r, field) == getattr(t, field), field
    assert repr(r) == repr(t)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    r, t = rill.iinfo(getattr(rill, name)), torch.iinfo(getattr(torch, name))
    for field in ["bits", "max", "min", "dtype"]:
        assert getattr(r, field) == getattr(t, field), field
    assert repr(r) == repr(t)


def test_defaults_and_errors():
    assert rill.finfo().dtype == "float32"
    assert rill.finfo(rill.float) == rill.finfo(rill.float32)
    assert rill.finfo(rill.half).eps == torch.finfo(torch.half).eps
    with pytest.raises(TypeError, match="iinfo"):
        rill.finfo(rill.int32)
    with pytest.raises(TypeError, match="finfo"):
        rill.iinfo(rill.float32)
    with pytest.raises(TypeError):
        rill.iinfo(rill.bool)
    with pytest.raises(TypeError):
        rill.finfo("float32")
