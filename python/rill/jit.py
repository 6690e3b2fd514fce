"""rill.jit: TorchScript is out of scope. script/trace/save/load raise; the decorators models carry in
their source (ignore, unused, export, ...) pass the function through, and is_scripting() is False."""

_ADVICE = ("TorchScript is not supported by rill. To save a model, use rill.save(model.state_dict(), path) and "
           "load it into the same module class with model.load_state_dict(rill.load(path)); to export a graph for "
           "other runtimes, use rill.onnx.export; to compile a model, use rill.nn.Graph.")


def _unsupported(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"rill.jit.{name}: {_ADVICE}")
    fn.__name__ = name
    fn.__doc__ = f"Raises RuntimeError: {_ADVICE}"
    return fn


script = _unsupported("script")
trace = _unsupported("trace")
trace_module = _unsupported("trace_module")
save = _unsupported("save")
load = _unsupported("load")
freeze = _unsupported("freeze")
optimize_for_inference = _unsupported("optimize_for_inference")


def _passthrough(fn=None, **kwargs):
    """A decorator that changes nothing (usable bare or called with arguments)."""
    if fn is None:
        return lambda f: f
    return fn


ignore = _passthrough
unused = _passthrough
export = _passthrough
script_if_tracing = _passthrough


def is_scripting():
    """False: rill never runs code as TorchScript."""
    return False


def is_tracing():
    """False: rill never traces code into TorchScript."""
    return False


class ScriptModule:
    """Stands for TorchScript's module type in isinstance checks; no rill object is one."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"rill.jit.ScriptModule: {_ADVICE}")


ScriptFunction = ScriptModule
