"""repr of tensors in PyTorch's format: the same widths, modes (integer-valued
floats, fixed, scientific), line wrapping, summarisation past 1,000 elements,
and dtype/size suffixes."""
import math

import numpy as np

from rill import _C

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None  # rill.set_printoptions(sci_mode=): True or False forces it, None chooses


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        absv = np.abs(finite)
        lo, hi = float(absv.min()), float(absv.max())
        vals = finite.tolist()
        self.int_mode = all(v == math.ceil(v) for v in vals)
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}e}") for v in vals])
            else:
                self.max_width = max([self.max_width] + [len(f"{v:.0f}") + 1 for v in vals])
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}e}") for v in vals])
        else:
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}f}") for v in vals])
        if SCI_MODE is not None and SCI_MODE != self.sci_mode:
            self.sci_mode = SCI_MODE
            width = (lambda v: len(f"{v:.{PRECISION}e}")) if SCI_MODE else (
                (lambda v: len(f"{v:.0f}") + 1) if self.int_mode else (lambda v: len(f"{v:.{PRECISION}f}")))
            self.max_width = max([1] + [width(v) for v in vals])

    def format(self, v):
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{PRECISION}f}"
        else:
            s = f"{v}"
        return (self.max_width - len(s)) * " " + s


def _summarized(a):
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:EDGEITEMS], a[-EDGEITEMS:])) if a.shape[0] > 2 * EDGEITEMS else a
    rows = list(range(EDGEITEMS)) + list(range(a.shape[0] - EDGEITEMS, a.shape[0])) \
        if a.shape[0] > 2 * EDGEITEMS else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector(a, indent, summarize, fmt):
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / (fmt.max_width + 2))))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = [fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."] + \
               [fmt.format(v) for v in a[-EDGEITEMS:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = [_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."] + \
                [_nested(a[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)]
    else:
        parts = [_nested(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _host_values(t):
    """The values as a numpy array: floats as float64, the rest as themselves."""
    if t.dtype.is_floating_point:
        return t.detach()._to_dtype(_C.float64, False).numpy(force=True)
    return t.numpy(force=True)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    default_dtype = t.dtype in (_C.get_default_dtype(), _C.int64, _C.bool)
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append("size=" + str(tuple(t._shape)))
        if t.dtype != _C.get_default_dtype():
            suffixes.append("dtype=" + repr(t.dtype))
        body = "[]"
    else:
        if not default_dtype:
            suffixes.append("dtype=" + repr(t.dtype))
        values = _host_values(t)
        summarize = values.size > THRESHOLD
        fmt = _Formatter(_summarized(values) if summarize else values, t.dtype.is_floating_point)
        body = _nested(values, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    out = [prefix + body]
    last_line_len = len(out[0]) - out[0].rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            out.append(", " + s)
            last_line_len += len(s) + 2
    out.append(")")
    return "".join(out)
