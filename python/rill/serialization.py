"""rill.save / rill.load: tensors, state dicts and nested containers.

rill.save writes PyTorch's zip checkpoint format (archive/data.pkl, a protocol-2 pickle in which each tensor is
torch._utils._rebuild_tensor_v2 over a storage kept in archive/data/<key>), so torch.load(f, weights_only=True)
reads a rill state dict as rill reads PyTorch's. The pickle is written by rill's own pickler, which admits only
tensors, parameters, numpy arrays, dtypes and dict/OrderedDict/list/tuple/number/str/bytes/None containers.

rill.load reads those files and PyTorch's through an Unpickler whose find_class admits only a short whitelist
(OrderedDict, the tensor-rebuild functions, storage and dtype names, rill's array rebuild, and what
add_safe_globals adds), all mapped to rill code: torch is never imported and nothing in a file can run code.
weights_only=False is the explicit opt-in PyTorch has for whole pickled objects: the file is fully unpickled,
with torch.* names mapped to rill's classes at the same import paths (rill.nn.modules.linear.Linear, ...).

It also reads rill's earlier format (version 1), little-endian:

    magic b"RILLSAVE" | u32 version | u64 header length | u32 crc32(header) | header | data

whose header is UTF-8 JSON: {"data_nbytes", "data_crc32", "root": node}; a node is one of
none/bool/int/float/str, list/tuple/dict/odict, tensor ({"dtype", "shape", "offset", "nbytes",
"requires_grad", "param"}), ref (a tensor saved earlier in the same file) or ndarray. Every size, offset and
checksum is checked before use.
"""
import collections
import io
import json
import os
import pickle
import struct
import zipfile
import zlib

import numpy as np

from rill import _C
from rill._C import Tensor

_MAGIC = b"RILLSAVE"
_VERSION = 1
_PREFIX = struct.Struct("<8sIQI")  # magic, version, header length, header crc32

# dtype name -> (numpy dtype used for the raw bytes, itemsize)
_DTYPES = {
    "bool": np.dtype("?"), "uint8": np.dtype("u1"), "int8": np.dtype("i1"), "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"), "int64": np.dtype("<i8"), "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<u2"), "float32": np.dtype("<f4"), "float64": np.dtype("<f8"),
}


def _tensor_bytes(t):
    """The values of t, contiguous and little-endian, as a numpy array of the carrier dtype."""
    t = t.detach()
    name = t.dtype.name
    if name == "bfloat16":
        f = np.asarray(t.float().numpy(), order="C")  # (ascontiguousarray would make a 0-dim array 1-dim)
        return (f.view(np.uint32) >> 16).astype("<u2")
    arr = np.asarray(t.contiguous().numpy(), order="C")
    return arr.astype(_DTYPES[name], copy=False)


def _tensor_from_array(arr, name):
    """A rill tensor of dtype name from its carrier array (copied)."""
    if name == "bfloat16":
        f = (arr.astype(np.uint32) << 16).view(np.float32)
        return _C.from_numpy(np.asarray(f, order="C"))._copy_now(_C.bfloat16)
    arr = np.asarray(arr.astype(arr.dtype.newbyteorder("="), copy=False), order="C")
    return _C.from_numpy(arr)._copy_now(getattr(_C, name))


# ----------------------------------------------------------------------------------------------- save

class _Global:
    """A name the checkpoint's pickle refers to (torch._utils._rebuild_tensor_v2, torch.FloatStorage, ...),
    written as a GLOBAL opcode without importing its module."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable
        raise TypeError(f"{self.module}.{self.name} is a name in a checkpoint, not a function")


class _StorageRef:
    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel


class _TorchPickler(pickle._Pickler):
    """Pickles tensors as torch.save does (a rebuild call over a storage that lives in its own zip entry), so
    torch.load(weights_only=True) reads the file; numpy arrays as rill.serialization._rebuild_ndarray."""

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self._storages = storages  # key -> bytes
        self._keep = []

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, _C.dtype):  # a dtype value: torch.<name>, as torch pickles its dtypes
            obj = _Global("torch", obj.name)
        if isinstance(obj, _Global):
            self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            names = {dtype: name for name, dtype in _TORCH_STORAGES.items() if name != "UntypedStorage"}
            return ("storage", _Global("torch", names[obj.dtype]), obj.key, "cpu", obj.numel)
        return None

    def _storage(self, arr, dtype):
        key = str(len(self._storages))
        self._storages[key] = np.ascontiguousarray(arr).reshape(-1).tobytes()
        return _StorageRef(key, dtype, int(arr.size))

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            from rill.nn.parameter import Parameter
            self._keep.append(obj)  # ids stay unique while saving
            arr = _tensor_bytes(obj)
            shape = tuple(int(n) for n in obj.shape)
            stride, acc = [], 1
            for n in reversed(shape):
                stride.append(acc)
                acc *= n
            rebuilt = (_Global("torch._utils", "_rebuild_tensor_v2"),
                       (self._storage(arr, obj.dtype.name), 0, shape, tuple(reversed(stride)),
                        bool(obj.requires_grad) and not isinstance(obj, Parameter), collections.OrderedDict()))
            if isinstance(obj, Parameter):
                return (_Global("torch._utils", "_rebuild_parameter"),
                        (_Rebuilt(rebuilt), bool(obj.requires_grad), collections.OrderedDict()))
            return rebuilt
        if isinstance(obj, _Rebuilt):
            return obj.reduced
        if isinstance(obj, np.ndarray):
            name = obj.dtype.name
            if name not in _DTYPES or name == "bfloat16" or obj.dtype.kind not in "biuf":
                raise TypeError(f"[save] can't save a numpy array of dtype {obj.dtype}: rill.save stores arrays of "
                                "bool, uint8, int8, int16, int32, int64, float16, float32 and float64")
            arr = np.asarray(obj, order="C").astype(_DTYPES[name], copy=False)
            return (_Global("rill.serialization", "_rebuild_ndarray"),
                    (self._storage(arr, name), tuple(int(n) for n in obj.shape)))
        return NotImplemented


class _Rebuilt:
    """A tensor's rebuild call inside a parameter's."""

    def __init__(self, reduced):
        self.reduced = reduced


def _check_savable(obj, depth=0):
    """Raise TypeError for anything rill.save does not store (before writing a byte)."""
    if depth > 200:
        raise ValueError("[save] the object is nested more than 200 levels deep")
    if obj is None or isinstance(obj, (bool, int, float, str, bytes, Tensor, np.ndarray, _C.dtype)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if isinstance(obj, dict):
        out = collections.OrderedDict() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[_check_savable(k, depth + 1)] = _check_savable(v, depth + 1)
        meta = getattr(obj, "_metadata", None)
        if isinstance(meta, dict) and isinstance(out, collections.OrderedDict):
            out._metadata = _check_savable(meta, depth + 1)
        return out
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_check_savable(v, depth + 1) for v in obj)
    if isinstance(obj, list):
        return [_check_savable(v, depth + 1) for v in obj]
    raise TypeError(f"[save] can't save an object of type {type(obj).__module__}.{type(obj).__qualname__}: "
                    "rill.save stores tensors, numpy arrays and dict/OrderedDict/list/tuple/int/float/str/bool/None "
                    "containers of them (save a module's state_dict(), not the module)")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write obj (tensors, state dicts, numpy arrays, nested dict/list/tuple/number/str/None) to f, a path or a
    binary file, in PyTorch's zip checkpoint format: torch.load(f, weights_only=True) reads what it holds but
    numpy arrays (which torch.load refuses in weights_only mode, as it does its own)."""
    if pickle_module is not None:
        raise ValueError("[save] pickle_module is not supported: rill writes only its own restricted pickles")
    tree = _check_savable(obj)
    storages = {}
    buf = io.BytesIO()
    pickler = _TorchPickler(buf, storages)
    pickler.dump(tree)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", buf.getvalue())
        zf.writestr("archive/byteorder", b"little")
        for key, raw in storages.items():
            zf.writestr(f"archive/data/{key}", raw)
        zf.writestr("archive/version", b"3\n")
    data = out.getvalue()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


# ----------------------------------------------------------------------------------------------- load

def _bad(msg):
    return RuntimeError(f"[load] {msg}")


class _Reader:
    def __init__(self, data, map_location):
        self.data = data
        self.tensors = {}
        self.map_location = map_location

    def int_field(self, node, key, low=0):
        v = node.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise _bad(f"corrupted file: tensor field '{key}' is {v!r}")
        return v

    def array(self, node):
        """The carrier array (read-only, over the file's bytes) of a tensor or ndarray node, checked."""
        name = node.get("dtype")
        if name not in _DTYPES:
            raise _bad(f"corrupted file: unknown dtype {name!r}")
        shape = node.get("shape")
        if not isinstance(shape, list) or len(shape) > 64 or \
                not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise _bad(f"corrupted file: bad tensor shape {shape!r}")
        offset = self.int_field(node, "offset")
        nbytes = self.int_field(node, "nbytes")
        numel = 1
        for s in shape:
            numel *= s
        itemsize = _DTYPES[name].itemsize
        if nbytes != numel * itemsize:
            raise _bad(f"corrupted file: a {name} tensor of shape {tuple(shape)} needs {numel * itemsize} bytes, "
                       f"the file says {nbytes}")
        if offset + nbytes > len(self.data):
            raise _bad(f"truncated or corrupted file: tensor data at bytes {offset}..{offset + nbytes} lies past the "
                       f"end of the data ({len(self.data)} bytes)")
        return np.frombuffer(self.data, dtype=_DTYPES[name], count=numel, offset=offset).reshape(shape)

    def tensor(self, node):
        name = node.get("dtype")
        t = _tensor_from_array(self.array(node), name)
        if node.get("param"):
            from rill.nn.parameter import Parameter
            t = Parameter(t, requires_grad=bool(node.get("requires_grad")))
        elif node.get("requires_grad") is True and name in ("float16", "bfloat16", "float32", "float64"):
            t.requires_grad = True
        ref = node.get("id")
        if isinstance(ref, int):
            self.tensors[ref] = t
        return t

    def node(self, node, depth=0):
        if depth > 250:
            raise _bad("corrupted file: nesting too deep")
        if not isinstance(node, dict):
            raise _bad(f"corrupted file: expected a node, found {type(node).__name__}")
        kind = node.get("t")
        if kind == "none":
            return None
        if kind == "bool":
            v = node.get("v")
            if not isinstance(v, bool):
                raise _bad("corrupted file: bad bool")
            return v
        if kind == "int":
            v = node.get("v")
            if not isinstance(v, str) or len(v) > 4000:
                raise _bad("corrupted file: bad int")
            try:
                return int(v)
            except ValueError:
                raise _bad("corrupted file: bad int") from None
        if kind == "float":
            try:
                return float.fromhex(node.get("v"))
            except (TypeError, ValueError):
                raise _bad("corrupted file: bad float") from None
        if kind == "str":
            v = node.get("v")
            if not isinstance(v, str):
                raise _bad("corrupted file: bad str")
            return v
        if kind == "dtype":
            v = node.get("v")
            if v not in _DTYPES:
                raise _bad(f"corrupted file: unknown dtype {v!r}")
            return getattr(_C, v)
        if kind == "tensor":
            return self.tensor(node)
        if kind == "ndarray":
            if node.get("dtype") == "bfloat16":
                raise _bad("corrupted file: numpy has no bfloat16 arrays")
            arr = self.array(node)
            return arr.astype(arr.dtype.newbyteorder("="), copy=True)
        if kind == "ref":
            ref = node.get("id")
            if not isinstance(ref, int) or ref not in self.tensors:
                raise _bad(f"corrupted file: reference to unknown tensor {ref!r}")
            return self.tensors[ref]
        if kind in ("list", "tuple"):
            items = node.get("items")
            if not isinstance(items, list):
                raise _bad(f"corrupted file: bad {kind}")
            out = [self.node(v, depth + 1) for v in items]
            return out if kind == "list" else tuple(out)
        if kind in ("dict", "odict"):
            items = node.get("items")
            if not isinstance(items, list):
                raise _bad(f"corrupted file: bad {kind}")
            out = collections.OrderedDict() if kind == "odict" else {}
            for pair in items:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _bad(f"corrupted file: bad {kind} item")
                k = self.node(pair[0], depth + 1)
                try:
                    hash(k)
                except TypeError:
                    raise _bad("corrupted file: a dict key is not hashable") from None
                out[k] = self.node(pair[1], depth + 1)
            if "metadata" in node:
                meta = self.node(node["metadata"], depth + 1)
                if isinstance(meta, dict) and kind == "odict":
                    out._metadata = meta
            return out
        raise _bad(f"corrupted file: unknown node kind {kind!r}")


def _load_rill(buf, map_location):
    if len(buf) < _PREFIX.size:
        raise _bad(f"truncated file: {len(buf)} bytes, shorter than rill's {_PREFIX.size}-byte prefix")
    magic, version, header_len, header_crc = _PREFIX.unpack_from(buf, 0)
    if version != _VERSION:
        raise _bad(f"unsupported rill file version {version} (this rill reads version {_VERSION})")
    start = _PREFIX.size
    if start + header_len > len(buf):
        raise _bad(f"truncated file: the header needs {header_len} bytes, only {len(buf) - start} remain")
    header = bytes(buf[start:start + header_len])
    if zlib.crc32(header) != header_crc:
        raise _bad("corrupted file: header checksum mismatch")
    try:
        meta = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _bad(f"corrupted file: header is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != "rill":
        raise _bad("corrupted file: header is not a rill header")
    data = buf[start + header_len:]
    nbytes = meta.get("data_nbytes")
    if not isinstance(nbytes, int) or nbytes != len(data):
        raise _bad(f"truncated or corrupted file: expected {nbytes!r} bytes of tensor data, found {len(data)}")
    if zlib.crc32(data) != meta.get("data_crc32"):
        raise _bad("corrupted file: tensor data checksum mismatch")
    return _Reader(data, map_location).node(meta.get("root"))


def _check_map_location(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return
    dev = map_location if isinstance(map_location, _C.device) else _C.device(str(map_location))
    if str(dev.type) != "cpu":
        raise RuntimeError(f"[load] map_location={map_location!r}: rill has no device '{dev}' in this build; "
                           "use 'cpu'")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Read what rill.save (or torch.save, zip format) wrote. weights_only=True (the default) never runs code from
    the file: only tensors, containers and what add_safe_globals allows are built. weights_only=False fully
    unpickles a trusted file (whole modules, any picklable object), torch.* names mapped to rill's. A truncated
    or corrupted file raises RuntimeError saying what is wrong."""
    if pickle_module is not None:
        raise ValueError("[load] pickle_module is not supported: rill never unpickles arbitrary objects")
    _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            buf = fh.read()
    else:
        buf = f.read()
    buf = memoryview(bytes(buf))
    if bytes(buf[:8]) == _MAGIC:
        return _load_rill(buf, map_location)
    if bytes(buf[:4]) == b"PK\x03\x04":
        return _load_torch_zip(bytes(buf), weights_only is not False)
    if len(buf) == 0:
        raise _bad("the file is empty")
    if len(buf) >= 2 and buf[0] == 0x80:
        raise _bad("this is a bare pickle (or PyTorch's legacy non-zip format); rill does not unpickle it. "
                   "Re-save with torch.save (zip format, the default) or rill.save")
    raise _bad("not a rill file (bad magic) nor a PyTorch zip checkpoint")


# ------------------------------------------------------------------------------------- torch zip files

class _Storage:
    """A storage read from a torch checkpoint: a flat numpy array of the carrier dtype."""

    def __init__(self, array, dtype):
        self.array = array
        self.dtype = dtype


class _Sealed:
    """Objects find_class hands to the unpickler: fresh per lookup and closed to BUILD, so a crafted pickle
    can't set state on them (or on anything shared between loads)."""

    __slots__ = ()

    def __setstate__(self, state):
        raise _bad(f"corrupted torch checkpoint: refusing to set state on {type(self).__name__}")


class _StorageType(_Sealed):
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class _AllowedCallable(_Sealed):
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


_TORCH_STORAGES = {
    "BoolStorage": "bool", "ByteStorage": "uint8", "CharStorage": "int8", "ShortStorage": "int16",
    "IntStorage": "int32", "LongStorage": "int64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "FloatStorage": "float32", "DoubleStorage": "float64", "UntypedStorage": "uint8",
}
_TORCH_DTYPES = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "short": "int16",
                 "int32": "int32", "int": "int32", "int64": "int64", "long": "int64", "float16": "float16",
                 "half": "float16", "bfloat16": "bfloat16", "float32": "float32", "float": "float32",
                 "float64": "float64", "double": "float64"}


def _checked_ints(values, what):
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                        for v in values):
        raise _bad(f"corrupted torch checkpoint: bad tensor {what} {values!r}")
    return tuple(values)


def _rebuild_tensor(storage, storage_offset, size, stride, dtype=None):
    if not isinstance(storage, _Storage):
        raise _bad("corrupted torch checkpoint: a tensor refers to no storage")
    size = _checked_ints(size, "size")
    stride = _checked_ints(stride, "stride")
    if len(size) != len(stride) or not isinstance(storage_offset, int) or storage_offset < 0:
        raise _bad("corrupted torch checkpoint: bad tensor geometry")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise _bad("corrupted torch checkpoint: negative size or stride")
    arr = storage.array
    name = storage.dtype
    if dtype is not None and dtype != name:  # _rebuild_tensor_v3 over an untyped (byte) storage
        carrier = _DTYPES[dtype]
        usable = arr.nbytes - arr.nbytes % carrier.itemsize
        arr = arr[:usable].view(carrier)
        name = dtype
    numel = 1
    for s in size:
        numel *= s
    if numel:
        last = storage_offset + sum((n - 1) * st for n, st in zip(size, stride))
        if last >= arr.size:
            raise _bad(f"corrupted torch checkpoint: a tensor of size {size} reaches element {last} of a storage "
                       f"of {arr.size} elements")
        view = np.lib.stride_tricks.as_strided(arr[storage_offset:], shape=size,
                                               strides=[s * arr.itemsize for s in stride], writeable=False)
    else:
        view = np.zeros(size, dtype=arr.dtype)
    return _tensor_from_array(np.array(view), name)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad and t.is_floating_point():
        t.requires_grad = True
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if not isinstance(dtype, _C.dtype):
        raise _bad("corrupted torch checkpoint: bad dtype in _rebuild_tensor_v3")
    t = _rebuild_tensor(storage, storage_offset, size, stride, dtype.name)
    if requires_grad and t.is_floating_point():
        t.requires_grad = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, *state):
    from rill.nn.parameter import Parameter
    if not isinstance(data, Tensor):
        raise _bad("corrupted torch checkpoint: a parameter holds no tensor")
    return Parameter(data, requires_grad=bool(requires_grad) and data.is_floating_point())


def _rebuild_ndarray(storage, shape):
    """A numpy array rill.save wrote: its storage's values in shape (a new writable array)."""
    if not isinstance(storage, _Storage):
        raise _bad("corrupted checkpoint: an array refers to no storage")
    shape = _checked_ints(shape, "array shape")
    numel = int(np.prod(shape)) if shape else 1
    if any(n < 0 for n in shape) or numel > storage.array.size:
        raise _bad(f"corrupted checkpoint: an array of shape {shape} in a storage of {storage.array.size} elements")
    return np.array(storage.array[:numel].reshape(shape)).astype(storage.array.dtype.newbyteorder("="))


def _codecs_encode(obj, encoding="utf-8"):
    # protocol-2 pickles carry bytes as _codecs.encode(str, 'latin1')
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1"):
        raise _bad("corrupted torch checkpoint: unexpected _codecs.encode call")
    return obj.encode("latin1")


def _allowed_globals():
    """(module, name) -> a factory of the object find_class returns (a fresh one per lookup)."""
    allowed = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        ("torch", "Size"): tuple,
        ("_codecs", "encode"): _codecs_encode,
    }
    allowed = {k: (lambda fn=fn: _AllowedCallable(fn)) for k, fn in allowed.items()}
    for storage, dtype in _TORCH_STORAGES.items():
        allowed[("torch", storage)] = allowed[("torch.storage", storage)] = (lambda d=dtype: _StorageType(d))
    for name, dtype in _TORCH_DTYPES.items():
        allowed[("torch", name)] = (lambda d=dtype: getattr(_C, d))  # a dtype value, or _rebuild_tensor_v3's
    allowed[("rill.serialization", "_rebuild_ndarray")] = lambda: _AllowedCallable(_rebuild_ndarray)
    return allowed


_ALLOWED = _allowed_globals()


_USER_SAFE = {}  # (module, name) -> object, from add_safe_globals


def add_safe_globals(safe_globals):
    """Let rill.load (weights_only=True) build these classes or call these functions when a checkpoint names
    them: each entry is the object, or (object, "module.name") for the name the file uses."""
    for entry in safe_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, None)
        if name is None:
            name = f"{obj.__module__}.{obj.__qualname__}"
        module, _, attr = name.rpartition(".")
        _USER_SAFE[(module, attr)] = obj


def get_safe_globals():
    """What add_safe_globals allowed, in order."""
    return list(_USER_SAFE.values())


def clear_safe_globals():
    """Forget everything add_safe_globals allowed."""
    _USER_SAFE.clear()


class safe_globals:
    """add_safe_globals for the duration of a with block."""

    def __init__(self, safe_globals):
        self._globals = safe_globals

    def __enter__(self):
        self._before = dict(_USER_SAFE)
        add_safe_globals(self._globals)

    def __exit__(self, *exc):
        _USER_SAFE.clear()
        _USER_SAFE.update(self._before)


def _torch_path_in_rill(module, name):
    """torch.nn.modules.linear.Linear -> rill.nn.modules.linear.Linear (None when rill has no such name)."""
    import importlib
    if module != "torch" and not module.startswith("torch."):
        return None
    try:
        obj = importlib.import_module("rill" + module[len("torch"):])
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError):
        return None


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, storages, weights_only=True):
        super().__init__(file)
        self._storages = storages
        self._weights_only = weights_only

    def find_class(self, module, name):
        if (module, name) in _USER_SAFE:
            return _USER_SAFE[(module, name)]
        if not self._weights_only:
            if (module, name) in _ALLOWED:
                return _ALLOWED[(module, name)]()
            mapped = _torch_path_in_rill(module, name)
            if mapped is not None:
                return mapped
            if module == "torch" or module.startswith("torch."):
                raise _bad(f"the checkpoint names '{module}.{name}', which rill does not have")
            return super().find_class(module, name)
        try:
            return _ALLOWED[(module, name)]()
        except (KeyError, TypeError):
            raise _bad(f"refusing to load '{module}.{name}' from a torch checkpoint: only tensors, parameters and "
                       "containers of them are allowed (loading never runs code from a file); pass weights_only=False "
                       "for a file you trust, or allow the name with rill.serialization.add_safe_globals") from None

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise _bad(f"corrupted torch checkpoint: unknown persistent id {pid!r}")
        _, storage_type, key, _location, numel = pid[:5]
        if not isinstance(storage_type, _StorageType):
            raise _bad("corrupted torch checkpoint: unknown storage type")
        if not isinstance(key, str) or not isinstance(numel, int):
            raise _bad("corrupted torch checkpoint: bad storage record")
        return self._storages(key, storage_type.dtype, numel)


def _zip_reason(e):
    text = str(e)
    return f"checksum mismatch: {text}" if "CRC" in text else text


def _load_torch_zip(buf, weights_only=True):
    try:
        zf = zipfile.ZipFile(io.BytesIO(buf))
        names = zf.namelist()
    except (zipfile.BadZipFile, EOFError, ValueError) as e:
        raise _bad(f"corrupted or truncated zip checkpoint ({e})") from None
    pkls = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise _bad("not a torch.save zip checkpoint (no <archive>/data.pkl)")
    root = pkls[0][:-len("data.pkl")]
    if root + "byteorder" in names and zf.read(root + "byteorder").strip() not in (b"little", b""):
        raise _bad("big-endian torch checkpoints are not supported")
    cache = {}

    def storage(key, dtype, numel):
        if key in cache:
            return cache[key]
        entry = root + "data/" + key
        if entry not in names:
            raise _bad(f"corrupted torch checkpoint: storage '{key}' is missing")
        try:
            raw = zf.read(entry)
        except (zipfile.BadZipFile, zlib.error, EOFError) as e:
            raise _bad(f"corrupted checkpoint: storage '{key}' can't be read ({_zip_reason(e)})") from None
        carrier = _DTYPES[dtype]
        if len(raw) < numel * carrier.itemsize:
            raise _bad(f"truncated torch checkpoint: storage '{key}' has {len(raw)} bytes for {numel} {dtype} "
                       "elements")
        s = _Storage(np.frombuffer(raw, dtype=carrier, count=numel), dtype)
        cache[key] = s
        return s

    try:
        data = zf.read(pkls[0])
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:
        raise _bad(f"corrupted checkpoint: data.pkl can't be read ({_zip_reason(e)})") from None
    try:
        return _RestrictedUnpickler(io.BytesIO(data), storage, weights_only).load()
    except RuntimeError:
        raise
    except Exception as e:  # noqa: BLE001 - any malformed pickle is reported as a load error
        raise _bad(f"corrupted torch checkpoint: {type(e).__name__}: {e}") from None
