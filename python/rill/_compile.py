"""rill.compile: accepts torch.compile's call and returns the model or function unchanged (eager)."""
import warnings

_warned = False


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """Return model unchanged (or, called without one, a decorator that does); warns once that rill's graph
    mode is rill.nn.Graph, which compiles a module's forward and training step for the runtime."""
    global _warned
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        def decorator(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           name=name, disable=disable, recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorator
    if not callable(model):
        raise TypeError(f"rill.compile: expected a module or a callable, got {type(model).__name__}")
    if not _warned and not disable:
        _warned = True
        warnings.warn("rill.compile returns the model unchanged and runs it eagerly; rill's graph mode is "
                      "rill.nn.Graph (subclass it and call the graph instead of the module)", UserWarning, stacklevel=2)
    return model
