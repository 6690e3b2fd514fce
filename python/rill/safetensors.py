"""safetensors files for rill tensors, through the `safetensors` package: the API of ``safetensors.torch``
(save_file, load_file, save, load), also as rill.save_file / rill.load_file.

    rill.safetensors.save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(rill.safetensors.load_file("model.safetensors"))

Files are the same bytes safetensors.torch writes, so each side reads the other's. The format holds a flat dict of
named tensors and text metadata, nothing that can run code."""
import os

import numpy as np

from rill import _C
from rill.serialization import _tensor_bytes, _tensor_from_array

# the format's dtype tag -> rill dtype name
_NAMES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
          "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64"}
_CARRIERS = {"bool": "?", "uint8": "u1", "int8": "i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
             "float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "float64": "<f8"}


def _package():
    try:
        import safetensors
    except ImportError:
        raise ImportError("rill.safetensors needs the safetensors package: pip install safetensors") from None
    return safetensors


def _flatten(tensors, keep_alive):
    """name -> safetensors.TensorSpec over the tensors' bytes (carrier arrays kept alive in keep_alive)."""
    if not isinstance(tensors, dict):
        raise TypeError(f"expected a dict of name -> rill.Tensor, got {type(tensors).__name__}")
    spec = _package().TensorSpec
    flat = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"{name!r} is a {type(t).__name__}, not a rill.Tensor; safetensors holds tensors only")
        arr = np.ascontiguousarray(_tensor_bytes(t)).reshape(-1)
        keep_alive.append(arr)
        flat[name] = spec(dtype=t.dtype.name, shape=list(t.shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    return flat


def _check_metadata(metadata):
    if metadata is not None and not (isinstance(metadata, dict)
                                     and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("metadata must be a dict of str -> str")


def save(tensors, metadata=None):
    """The safetensors bytes of a dict of tensors (and optional str -> str metadata)."""
    _check_metadata(metadata)
    keep_alive = []
    return bytes(_package().serialize(_flatten(tensors, keep_alive), metadata=metadata))


def save_file(tensors, filename, metadata=None):
    """Write a dict of tensors (and optional str -> str metadata) to a safetensors file."""
    _check_metadata(metadata)
    keep_alive = []
    _package().serialize_file(_flatten(tensors, keep_alive), os.fspath(filename), metadata=metadata)


def load(data):
    """The dict of tensors in safetensors bytes (copies: the result does not keep data alive)."""
    out = {}
    for name, entry in _package().deserialize(bytes(data)):
        tag = entry["dtype"]
        if tag not in _NAMES:
            raise TypeError(f"{name!r} has dtype {tag}, which rill does not have (it has {', '.join(_NAMES)})")
        dtype = _NAMES[tag]
        arr = np.frombuffer(entry["data"], dtype=_CARRIERS[dtype]).reshape(entry["shape"])
        out[name] = _tensor_from_array(arr, dtype)
    return out


def load_file(filename, device="cpu"):
    """The dict of tensors in a safetensors file."""
    if str(device) != "cpu":
        raise RuntimeError(f"[safetensors.load_file] this build of rill has CPU tensors only; use device='cpu', "
                           f"got {device!r}")
    with open(os.fspath(filename), "rb") as f:
        return load(f.read())
