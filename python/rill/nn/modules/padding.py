"""Padding layers: constant, zero, reflection, replication and circular, for 1, 2 and 3 dimensions."""
from rill.nn import functional as F
from rill.nn.modules.module import Module


class _PadNd(Module):
    _mode, _dims = "constant", 1

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = (padding,) * (2 * self._dims) if isinstance(padding, int) else tuple(padding)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", 0.0 if self.value is None else self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


def _pad_class(name, mode, dims):
    return type(name, (_PadNd,), {"_mode": mode, "_dims": dims, "__module__": __name__})


globals().update({f"{prefix}Pad{d}d": _pad_class(f"{prefix}Pad{d}d", mode, d)
                  for prefix, mode in (("Constant", "constant"), ("Zero", "constant"), ("Reflection", "reflect"),
                                       ("Replication", "replicate"), ("Circular", "circular"))
                  for d in (1, 2, 3)})
