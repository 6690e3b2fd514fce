"""rill.safetensors: files each side (rill, safetensors.torch) reads from the other, every rill dtype."""
import pytest
import torch

import rill

st_torch = pytest.importorskip("safetensors.torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def torch_tensors():
    g = torch.Generator().manual_seed(0)
    out = {}
    for i, name in enumerate(DTYPES):
        x = torch.randn(3, i + 1, generator=g) * 50
        out[name] = (x > 0) if name == "bool" else x.to(getattr(torch, name))
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.zeros(0, 4)
    return out


def as_torch(t):
    return torch.from_numpy(t.float().numpy()).to(getattr(torch, t.dtype.name)) if t.dtype.name == "bfloat16" \
        else torch.from_numpy(t.numpy().copy())


def test_rill_reads_torch_file(tmp_path):
    expected = torch_tensors()
    st_torch.save_file(expected, tmp_path / "t.safetensors", metadata={"format": "pt"})
    got = rill.load_file(tmp_path / "t.safetensors")
    assert set(got) == set(expected)
    for name, t in expected.items():
        assert got[name].dtype.name == str(t.dtype).removeprefix("torch."), name
        assert torch.equal(as_torch(got[name]), t), name


def test_torch_reads_rill_file_and_bytes_round_trip(tmp_path):
    src = {name: rill.tensor(t.float().numpy()).to(getattr(rill, str(t.dtype).removeprefix("torch.")))
           for name, t in torch_tensors().items()}
    rill.safetensors.save_file(src, tmp_path / "r.safetensors", metadata={"step": "3"})
    got = st_torch.load_file(tmp_path / "r.safetensors")
    for name, t in src.items():
        assert torch.equal(got[name], as_torch(t)), name
    again = rill.safetensors.load(rill.safetensors.save(src))
    for name, t in src.items():
        assert torch.equal(as_torch(again[name]), as_torch(t)), name


def test_state_dict_round_trip(tmp_path):
    model = rill.nn.Linear(4, 3)
    rill.save_file(model.state_dict(), tmp_path / "m.safetensors")
    fresh = rill.nn.Linear(4, 3)
    fresh.load_state_dict(rill.load_file(tmp_path / "m.safetensors"))
    assert torch.equal(as_torch(fresh.weight.detach()), as_torch(model.weight.detach()))


def test_bad_input():
    with pytest.raises(TypeError, match="not a rill.Tensor"):
        rill.safetensors.save({"a": [1, 2]})
    with pytest.raises(TypeError, match="metadata"):
        rill.safetensors.save({"a": rill.ones(2)}, metadata={"a": 1})
    with pytest.raises(RuntimeError, match="CPU tensors only"):
        rill.load_file("x.safetensors", device="cuda")
