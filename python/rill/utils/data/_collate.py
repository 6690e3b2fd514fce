"""default_collate / default_convert: samples -> batched tensors (PyTorch's rules)."""
import collections.abc
import copy

import numpy as np

import rill
from rill._C import Tensor

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _stack(tensors):
    stack = getattr(rill, "stack", None)
    if stack is not None:
        return stack(tensors, 0)
    # until rill.stack exists: through numpy (a copy)
    from rill.serialization import _tensor_bytes, _tensor_from_array
    name = tensors[0].dtype.name
    if any(t.dtype.name != name for t in tensors):
        raise TypeError(f"[stack] expected tensors of one dtype, got {sorted({str(t.dtype) for t in tensors})}")
    if any(tuple(t.shape) != tuple(tensors[0].shape) for t in tensors):
        raise RuntimeError("stack expects each tensor to be equal size, but got "
                           + " and ".join(sorted({str(list(t.shape)) for t in tensors})))
    return _tensor_from_array(np.stack([_tensor_bytes(t) for t in tensors]), name)


def default_collate(batch):
    """Stack tensors, numpy arrays and numbers along a new first dim; recurse into dicts, tuples and lists."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(list(batch))
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if elem.dtype.kind in "SaUO":
                raise TypeError(_ERR.format(elem.dtype))
            return rill.tensor(np.stack(batch))
        if elem.shape == ():  # numpy scalars
            return rill.tensor(np.array(batch))
    if isinstance(elem, bool):
        return rill.tensor(batch)
    if isinstance(elem, float):
        return rill.tensor(batch, dtype=rill.float64)
    if isinstance(elem, int):
        return rill.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
            return clone
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """Numpy arrays to tensors, recursively (what DataLoader(batch_size=None) applies)."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ in ("ndarray", "memmap"):
        if data.dtype.kind in "SaUO":
            return data
        return rill.as_tensor(data)
    if elem_type.__module__ == "numpy" and getattr(data, "shape", None) == ():
        return rill.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
