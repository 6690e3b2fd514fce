"""The named tuples ops return, by op name, as PyTorch's torch.return_types: rill.max(x, 0) is a
rill.return_types.max with fields values and indices (Note [Named outputs] in python/src/schema_bindings.cpp)."""
from rill._C import _return_types as _types

globals().update(_types)
__all__ = sorted(_types)
