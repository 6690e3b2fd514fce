"""Throw random bad arguments at every bound function and Tensor method.

Every call must either succeed or raise a typed Python exception; none may
crash, abort or hang the interpreter. The fuzzing runs in a child process, so
a segfault fails the test instead of killing pytest.
"""
import subprocess
import sys
import textwrap

FUZZ = textwrap.dedent(r"""
    import itertools, random, sys, signal
    import numpy as np
    import rill

    random.seed(int(sys.argv[1]))
    signal.alarm(240)   # a hang fails the test
    ALLOWED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, OverflowError,
               AttributeError, KeyError)

    def samples():
        f = rill.randn(2, 3)
        return [None, "x", "cpu", "cuda", b"\x00", 3.5, float("nan"), float("inf"), -1, 0, 1, 2, 10**30, -10**30,
                True, (), (2, 3), (-1,), (0,), [1, [2]], [[1, 2], [3]], {}, object(), np.zeros(3), np.zeros((2, 0)),
                np.array(["a"]), rill.bool, rill.float16, rill.bfloat16, rill.int8, f, f.T, f[0], f[0, 0],
                rill.zeros(0), rill.ones(3, dtype=rill.int64), rill.ones(3, dtype=rill.bool),
                rill.ones(2, 3, dtype=rill.float16), rill.ones(4, 1, dtype=rill.bfloat16), slice(None, None, -1),
                Ellipsis, 2**63, -2**63 - 1, 1e308, (2**62, 2**62)]

    def callables():
        out = []
        for name in dir(rill._C):
            obj = getattr(rill._C, name)
            if callable(obj) and not isinstance(obj, type) and not name.startswith("_") and name not in (
                    "set_num_threads", "manual_seed", "seed", "set_env_override", "empty_cache"):
                out.append((name, obj, False))
        out += [(name, obj, False) for name, obj in rill._C._schema_nn_functional.items()]
        for name in dir(rill.Tensor):
            if name in ("__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__", "__del__",
                        "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__delattr__",
                        "__setattr__", "__getattribute__", "__dir__", "__sizeof__"):
                continue
            attr = getattr(rill.Tensor, name)
            if callable(attr):
                out.append((name, attr, True))
        for name in ("tensor", "as_tensor", "zeros_like", "full_like", "reshape", "flatten", "squeeze"):
            out.append((name, getattr(rill, name), False))
        return out

    calls = 0
    for name, fn, is_method in callables():
        for _ in range(60):
            pool = samples()
            nargs = random.randint(0, 3)
            args = [random.choice(pool) for _ in range(nargs)]
            if is_method:
                args = [random.choice([rill.randn(2, 3), rill.zeros(0), rill.ones(3, dtype=rill.int64),
                                       rill.tensor(1.5), rill.ones(2, 2, dtype=rill.bool)])] + args
            kwargs = {}
            if random.random() < 0.2:
                kwargs[random.choice(["dim", "dtype", "keepdim", "device", "bogus", "alpha", "size"])] = \
                    random.choice(pool)
            try:
                r = fn(*args, **kwargs)
                if isinstance(r, rill.Tensor):
                    repr(r)
            except ALLOWED:
                pass
            except Exception as e:  # an untyped error is a bug too
                print(f"UNTYPED {name}{tuple(type(a).__name__ for a in args)}: {type(e).__name__}: {e}")
                sys.exit(3)
            calls += 1
    print("CALLS", calls)
""")


def _run(seed):
    p = subprocess.run([sys.executable, "-c", FUZZ, str(seed)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"fuzzer died (rc={p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    assert "CALLS" in p.stdout
    return int(p.stdout.split("CALLS")[-1])


def test_random_bad_arguments_never_crash():
    calls = _run(seed=1)
    assert calls > 5000


def test_random_bad_arguments_never_crash_second_seed():
    _run(seed=2)
