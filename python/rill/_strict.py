"""Strict dtype mode (docs/architecture.md §4): every implicit dtype conversion raises TypeError.

    rill.set_strict_dtype(True)        # this thread, until turned off (None: back to the process default)
    with rill.strict_dtype():          # a block (also a decorator: @rill.strict_dtype())
        ...
    RILL_STRICT_DTYPE=1 python3 x.py   # the process default, for every thread

The mode is per thread: a new thread starts from the process default. The ops check it where they infer a
result dtype (src/rill/ops/type_promotion.cpp, Note [Strict dtype mode]); the Python-side cases
(rill.tensor of mixed numbers, load_state_dict, optimizers) are checked here and where they happen.

What is forbidden: tensor operands of different dtypes; an int or bool tensor made float (true division,
sqrt, exp, ...); a Python number of a higher category than the tensor (bool < int < float: 1.5 with an int
tensor, 1 with a bool tensor); in-place ops, copy_, x[i] = v and masked_fill whose value dtype differs from
the destination's; load_state_dict of another dtype; an optimizer step whose gradient dtype differs from
its parameter's; rill.tensor of mixed Python ints and floats without dtype=.

What is allowed: explicit conversions (.to(dtype), .float(), .long(), dtype= arguments); arguments whose
dtype an op's contract fixes (int64 class targets, bool masks, int64 indices); comparisons' bool results;
sums of int or bool tensors (int64, counting); Python numbers of the tensor's category or a lower one
(2 with a float tensor, True with an int tensor). The backward pass (gradient rules, and tensor hooks, which
it calls) runs with the mode off: the conversions gradient rules make are rill's, not the user's.

Graph tracing, when it comes, runs the same inference functions, so it honours the mode without code of its
own.
"""
import functools

from rill import _C


def set_strict_dtype(mode):
    """Turn strict dtype mode on (True) or off (False) for the calling thread; None follows the process
    default again (RILL_STRICT_DTYPE)."""
    _C.set_strict_dtype(None if mode is None else bool(mode))


def is_strict_dtype():
    """True when strict dtype mode is on for the calling thread."""
    return _C.is_strict_dtype()


class strict_dtype:
    """Context manager (and decorator) that turns strict dtype mode on (or off: strict_dtype(False)) for the
    calling thread, restoring its previous setting on exit."""

    def __new__(cls, mode=True):
        if callable(mode):  # bare @rill.strict_dtype on a function
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self._previous = []

    def __enter__(self):
        self._previous.append(_C._strict_dtype_setting())
        _C._set_strict_dtype_setting(1 if self.mode else 0)
        return self

    def __exit__(self, *exc):
        _C._set_strict_dtype_setting(self._previous.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with strict_dtype(self.mode):
                return fn(*args, **kwargs)
        return wrapper


def _name(dtype):
    return "rill." + dtype.name


def check_number_kinds(data):
    """[tensor] under strict mode: TypeError when Python data mixes number kinds (ints and floats, bools and
    ints) and would be converted to one dtype implicitly."""
    kinds = set()

    def walk(v):
        if isinstance(v, (list, tuple)):
            for e in v:
                walk(e)
        elif isinstance(v, bool) or type(v).__name__ == "bool_":
            kinds.add("bool")
        elif isinstance(v, int) or type(v).__module__ == "numpy" and "int" in type(v).__name__:
            kinds.add("int")
        elif isinstance(v, float) or type(v).__module__ == "numpy" and "float" in type(v).__name__:
            kinds.add("float")

    walk(data)
    if len(kinds) > 1:
        order = [k for k in ("bool", "int", "float") if k in kinds]
        target = {"float": "rill.float32", "int": "rill.int64", "bool": "rill.bool"}[order[-1]]
        raise TypeError(f"[tensor] strict dtype mode: data mixes Python {' and '.join(k + 's' for k in order)}; "
                        f"pass dtype= explicitly, e.g. rill.tensor(data, dtype={target})")
