"""rill.save / rill.load: round trips, corrupted and truncated files, files crafted to run code on load, and
checkpoints written by torch.save."""
import io
import json
import os
import pickle
import struct
import zipfile
import zlib
from collections import OrderedDict

import numpy as np
import pytest
import torch

import rill
from conftest import DTYPES, assert_close, make_array, rill_from_numpy, to_torch


def _roundtrip(obj):
    buf = io.BytesIO()
    rill.save(obj, buf)
    buf.seek(0)
    return rill.load(buf)


@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_every_dtype(dtype):
    for shape in [(), (0,), (3,), (2, 3, 4)]:
        t = rill_from_numpy(make_array(shape, dtype, seed=len(shape)), dtype)
        got = _roundtrip(t)
        assert got.dtype == t.dtype and tuple(got.shape) == tuple(t.shape)
        assert_close(got, to_torch(t), rtol=0, atol=0)


def test_roundtrip_special_floats_exactly():
    t = rill.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-45, 3.4e38])
    got = _roundtrip({"t": t, "f": [float("nan"), -0.0, 1e308, 0.1]})
    np.testing.assert_array_equal(got["t"].numpy(), t.numpy())
    assert math_isnan(got["f"][0]) and str(got["f"][1]) == "-0.0" and got["f"][2:] == [1e308, 0.1]


def math_isnan(x):
    return x != x


def test_roundtrip_views_are_saved_as_their_values():
    base = rill.arange(48, dtype=rill.float32).reshape(6, 8)
    views = {"t": base.t(), "strided": base[::2, 1::3], "expanded": rill.tensor([1.0, 2.0]).reshape(2, 1).expand(2, 5),
             "row": base[3], "perm": base.reshape(2, 3, 8).permute(2, 0, 1)}
    got = _roundtrip(views)
    for k, v in views.items():
        assert tuple(got[k].shape) == tuple(v.shape), k
        np.testing.assert_array_equal(got[k].numpy(), v.numpy())
        assert got[k].is_contiguous()


def test_roundtrip_nested_containers():
    obj = OrderedDict(a=[1, 2.5, "s", None, True, (3, (4, rill.ones(2)))],
                      b={0: rill.zeros(2, 2, dtype=rill.int64), "k": {"deep": [rill.tensor(7)]}},
                      big=2 ** 70, neg=-5)
    obj._metadata = OrderedDict({"": {"version": 1}})
    got = _roundtrip(obj)
    assert isinstance(got, OrderedDict) and list(got) == ["a", "b", "big", "neg"]
    assert got._metadata == {"": {"version": 1}}
    assert got["a"][:5] == [1, 2.5, "s", None, True] and isinstance(got["a"][5], tuple)
    assert got["a"][5][0] == 3 and got["a"][5][1][1].tolist() == [1.0, 1.0]
    assert type(got["b"]) is dict and 0 in got["b"] and got["b"][0].dtype == rill.int64
    assert got["b"]["k"]["deep"][0].item() == 7 and got["big"] == 2 ** 70 and got["neg"] == -5


def test_shared_tensors_stay_shared_and_requires_grad_is_kept():
    w = rill.randn(3, requires_grad=True)
    got = _roundtrip({"a": w, "b": w, "c": [w]})
    assert got["a"] is got["b"] and got["c"][0] is got["a"]
    assert got["a"].requires_grad


def test_save_to_path_and_load_from_path(tmp_path):
    p = tmp_path / "x.rill"
    rill.save({"w": rill.arange(5)}, str(p))
    assert rill.load(str(p), map_location="cpu")["w"].tolist() == [0, 1, 2, 3, 4]
    assert rill.load(p, weights_only=True)["w"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        rill.load(p, map_location="cuda")


def test_save_rejects_arbitrary_objects():
    class Thing:
        pass
    with pytest.raises(TypeError, match="can't save an object of type"):
        rill.save({"x": Thing()}, io.BytesIO())


def test_module_state_dict_roundtrip():
    model = rill.nn.Sequential(rill.nn.Linear(4, 3), rill.nn.ReLU(), rill.nn.BatchNorm1d(3), rill.nn.Linear(3, 2))
    sd = model.state_dict()
    got = _roundtrip(sd)
    assert list(got) == list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias", "2.running_mean",
                                     "2.running_var", "2.num_batches_tracked", "3.weight", "3.bias"]
    model2 = rill.nn.Sequential(rill.nn.Linear(4, 3), rill.nn.ReLU(), rill.nn.BatchNorm1d(3), rill.nn.Linear(3, 2))
    model2.load_state_dict(got)
    for (k, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


# --- broken files ---

def _saved_bytes(obj):
    buf = io.BytesIO()
    rill.save(obj, buf)
    return buf.getvalue()


def _with_header(header_obj, data=b""):
    """A file in rill's format with any header (checksums made right, so only the content is judged)."""
    header_obj.setdefault("format", "rill")
    header_obj.setdefault("data_nbytes", len(data))
    header_obj.setdefault("data_crc32", zlib.crc32(data))
    header = json.dumps(header_obj).encode()
    return struct.pack("<8sIQI", b"RILLSAVE", 1, len(header), zlib.crc32(header)) + header + data


def test_truncated_files_raise_clearly():
    raw = _saved_bytes({"w": rill.randn(10, 10), "b": rill.randn(10)})
    for cut in [0, 5, 20, 30, len(raw) // 2, len(raw) - 1]:
        with pytest.raises(RuntimeError, match=r"\[load\] .*(truncated|empty|bad magic)"):
            rill.load(io.BytesIO(raw[:cut]))


def test_corrupted_bytes_raise_clearly():
    w = rill.randn(10, 10)
    raw = bytearray(_saved_bytes({"w": w}))
    data_byte = bytearray(raw)
    data_byte[raw.index(w.numpy().tobytes()) + 7] ^= 0xFF  # inside the tensor's storage entry
    with pytest.raises(RuntimeError, match="checksum"):
        rill.load(io.BytesIO(bytes(data_byte)))
    pickle_byte = bytearray(raw)
    pickle_byte[raw.index(b"_rebuild_tensor_v2")] ^= 0x01  # inside data.pkl
    with pytest.raises(RuntimeError, match="checksum"):
        rill.load(io.BytesIO(bytes(pickle_byte)))
    legacy = bytearray(_with_header({"format": "rill", "data_nbytes": 0, "data_crc32": 0, "root": {"t": "none"}}))
    header_byte = bytearray(legacy)
    header_byte[30] ^= 0x01
    with pytest.raises(RuntimeError, match="checksum"):
        rill.load(io.BytesIO(bytes(header_byte)))
    with pytest.raises(RuntimeError, match="version"):
        rill.load(io.BytesIO(bytes(legacy[:8]) + struct.pack("<I", 99) + bytes(legacy[12:])))
    with pytest.raises(RuntimeError, match="not a rill file"):
        rill.load(io.BytesIO(b"hello world, not a checkpoint"))


def test_state_dicts_cross_to_torch_and_back(tmp_path):
    import torch
    m = rill.nn.Sequential(rill.nn.Linear(3, 4), rill.nn.BatchNorm1d(4))
    rill.save(m.state_dict(), tmp_path / "rill.pt")
    sd = torch.load(tmp_path / "rill.pt", weights_only=True)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    t.load_state_dict(sd)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())
        assert str(sd[k].dtype).split(".")[-1] == v.dtype.name
    torch.save(t.state_dict(), tmp_path / "torch.pt")
    back = rill.load(tmp_path / "torch.pt")
    for k, v in back.items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    mixed = {"h": rill.ones(2, dtype=rill.bfloat16), "dt": rill.float16, "n": [1, (2.5, "x"), None]}
    rill.save(mixed, tmp_path / "mixed.pt")
    tm = torch.load(tmp_path / "mixed.pt", weights_only=True)
    assert tm["h"].dtype == torch.bfloat16 and tm["dt"] == torch.float16 and tm["n"] == [1, (2.5, "x"), None]


@pytest.mark.parametrize("root", [
    {"t": "object", "module": "os", "name": "system", "args": ["touch MARKER"]},
    {"t": "pickle", "v": "gASVIQAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAh0b3VjaCBNQVJLRVKUhZRSlC4="},
    {"t": "tensor", "dtype": "object", "shape": [1], "offset": 0, "nbytes": 8},
    {"t": "tensor", "dtype": "float32", "shape": [1000], "offset": 0, "nbytes": 4000},
    {"t": "tensor", "dtype": "float32", "shape": [2], "offset": 0, "nbytes": 4},
    {"t": "tensor", "dtype": "float32", "shape": [-2], "offset": 0, "nbytes": -8},
    {"t": "dict", "items": [[{"t": "list", "items": []}, {"t": "none"}]]},
    {"t": "ref", "id": 3},
    {"t": "int", "v": "__import__('os').system('touch MARKER')"},
])
def test_crafted_rill_files_never_run_code(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    payload = json.loads(json.dumps(root).replace("MARKER", str(tmp_path / "pwned")))
    with pytest.raises(RuntimeError, match=r"\[load\]"):
        rill.load(io.BytesIO(_with_header({"root": payload}, b"\0" * 16)))
    assert not (tmp_path / "pwned").exists()


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_crafted_torch_zip_never_runs_code(tmp_path):
    marker = tmp_path / "pwned"
    # a hand-made torch-style zip whose data.pkl calls os.system
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"w": _Evil(marker)}, protocol=2))
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
    with pytest.raises(RuntimeError, match="refusing to load"):
        rill.load(str(path))
    # the same through torch.save itself
    path2 = tmp_path / "evil2.pt"
    torch.save({"state": _Evil(marker)}, str(path2))
    with pytest.raises(RuntimeError, match="refusing to load"):
        rill.load(str(path2))
    # a bare pickle is refused outright
    with pytest.raises(RuntimeError, match="bare pickle"):
        rill.load(io.BytesIO(pickle.dumps(_Evil(marker))))
    assert not marker.exists()


@pytest.mark.parametrize("payload", [
    b"\x80\x02ctorch\nFloatStorage\n}b.",  # BUILD on a storage type
    b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}b.",  # BUILD on an allowed function
    b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN}X\x0c\x00\x00\x00__defaults__(K\x01ts\x86b.",
    b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x001+1\x85R.",
    b"\x80\x02ctorch\nload\n.",
])
def test_torch_zip_pickle_tricks_are_refused(payload, tmp_path):
    path = tmp_path / "trick.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
    with pytest.raises(RuntimeError, match=r"\[load\]"):
        rill.load(str(path))
    # and nothing shared was changed: a real checkpoint still loads
    good = tmp_path / "good.pt"
    torch.save({"x": torch.arange(3.0)}, str(good))
    assert rill.load(str(good))["x"].tolist() == [0.0, 1.0, 2.0]


def test_torch_zip_with_out_of_bounds_view_is_rejected(tmp_path):
    t = torch.arange(10, dtype=torch.float32)
    path = tmp_path / "t.pt"
    torch.save({"x": t}, str(path))
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    pkl = next(n for n in entries if n.endswith("data.pkl"))
    data_key = next(n for n in entries if "/data/" in n)
    entries[data_key] = entries[data_key][:8]  # a storage shorter than its declared size
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as zf:
        for n, b in entries.items():
            zf.writestr(n, b)
    with pytest.raises(RuntimeError, match="truncated torch checkpoint"):
        rill.load(str(bad))
    with pytest.raises(RuntimeError, match="corrupted or truncated zip|not a torch"):
        rill.load(io.BytesIO(path.read_bytes()[:200]))
    assert pkl


# --- torch.save checkpoints ---

def test_load_torch_saved_state_dict(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                torch.nn.Linear(4, 3))
    model(torch.randn(2, 2, 3, 3))  # move the running stats
    sd = model.state_dict()
    path = tmp_path / "m.pt"
    torch.save(sd, str(path))
    got = rill.load(str(path))
    assert isinstance(got, OrderedDict) and list(got) == list(sd)
    for k, v in sd.items():
        assert_close(got[k], v, rtol=0, atol=0)
    assert got["1.num_batches_tracked"].dtype == rill.int64


def test_load_torch_saved_mixed_objects(tmp_path):
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    obj = {
        "dtypes": [torch.tensor([1, 2], dtype=getattr(torch, d)) for d in DTYPES],
        "view": base.t()[1:, ::2],  # shares base's storage, non-contiguous, with an offset
        "base": base,
        "param": torch.nn.Parameter(torch.ones(2, 2)),
        "scalar": torch.tensor(3.5),
        "nested": {"lr": 0.1, "betas": (0.9, 0.999), "steps": [1, 2], "name": "adam", "none": None},
    }
    path = tmp_path / "mixed.pt"
    torch.save(obj, str(path))
    got = rill.load(str(path))
    for r, t in zip(got["dtypes"], obj["dtypes"]):
        assert_close(r, t, rtol=0, atol=0)
    assert_close(got["view"], obj["view"], rtol=0, atol=0)
    assert_close(got["base"], obj["base"], rtol=0, atol=0)
    assert isinstance(got["param"], rill.nn.Parameter) and got["param"].requires_grad
    assert got["scalar"].item() == 3.5 and got["scalar"].ndim == 0
    assert got["nested"] == obj["nested"]


def test_load_torch_optimizer_state_dict_into_rill_optimizer(tmp_path):
    tp = [torch.nn.Parameter(torch.randn(3, 2))]
    topt = torch.optim.Adam(tp, lr=0.01)
    for _ in range(3):
        tp[0].grad = torch.randn(3, 2)
        topt.step()
    path = tmp_path / "opt.pt"
    torch.save(topt.state_dict(), str(path))
    sd = rill.load(str(path))
    rp = [rill.tensor(tp[0].detach().numpy(), requires_grad=True)]
    ropt = rill.optim.Adam(rp, lr=0.01)
    ropt.load_state_dict(sd)
    g = torch.randn(3, 2)
    tp[0].grad = g
    rp[0].grad = rill.tensor(g.numpy())
    topt.step()
    ropt.step()
    assert_close(rp[0].detach(), tp[0].detach(), rtol=1e-5, atol=1e-6)


# --- numpy arrays ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_numpy_arrays_round_trip(tmp_path, dtype):
    arrays = {"a": make_array((2, 3), dtype), "scalar": np.array(make_array((), dtype)), "empty": np.zeros(
        (0, 4), dtype=dtype), "transposed": make_array((3, 2), dtype).T, "big_endian": make_array(
        (5,), dtype).astype(np.dtype(dtype).newbyteorder(">"))}
    path = tmp_path / "arrays.pt"
    rill.save({"arrays": arrays, "with_tensor": [rill.ones(2), arrays["a"]]}, path)
    got = rill.load(path)
    for k, a in arrays.items():
        assert isinstance(got["arrays"][k], np.ndarray), k
        assert got["arrays"][k].dtype == np.dtype(dtype) and got["arrays"][k].shape == a.shape, k
        np.testing.assert_array_equal(got["arrays"][k], a, err_msg=k)
        assert got["arrays"][k].flags.writeable, k
    assert isinstance(got["with_tensor"][0], rill.Tensor)


@pytest.mark.parametrize("array", [np.array([1 + 2j]), np.array(["a"]), np.array([object()]),
                                   np.array([1], dtype=np.uint16)])
def test_saving_an_unsupported_numpy_array_raises_type_error(tmp_path, array):
    with pytest.raises(TypeError, match="numpy array of dtype"):
        rill.save({"x": array}, tmp_path / "x.pt")


class _Point:
    def __init__(self, x):
        self.x = x


def test_whole_pickled_modules_load_only_when_asked(tmp_path):
    import torch
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    torch.save(t, tmp_path / "whole.pt")
    with pytest.raises(RuntimeError, match="weights_only=False"):
        rill.load(tmp_path / "whole.pt")
    m = rill.load(tmp_path / "whole.pt", weights_only=False)
    assert type(m) is rill.nn.Sequential and type(m[0]) is rill.nn.Linear
    x = np.ones((1, 3), dtype=np.float32)
    np.testing.assert_allclose(m(rill.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_safe_globals_admit_named_classes(tmp_path):
    import torch
    torch.save({"p": _Point(3)}, tmp_path / "point.pt")
    with pytest.raises(RuntimeError, match="refusing"):
        rill.load(tmp_path / "point.pt")
    with rill.serialization.safe_globals([_Point]):
        assert rill.load(tmp_path / "point.pt")["p"].x == 3
    with pytest.raises(RuntimeError, match="refusing"):
        rill.load(tmp_path / "point.pt")
    rill.serialization.add_safe_globals([_Point])
    try:
        assert rill.load(tmp_path / "point.pt")["p"].x == 3
    finally:
        rill.serialization.clear_safe_globals()
