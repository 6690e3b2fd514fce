"""rill.compile returns its argument (warning once); rill.jit's TorchScript entry points raise RuntimeError."""
import warnings

import pytest

import rill
import rill._compile


def test_compile_returns_model_and_warns_once():
    rill._compile._warned = False
    model = rill.nn.Linear(2, 3)
    with pytest.warns(UserWarning, match="rill.nn.Graph"):
        assert rill.compile(model, mode="reduce-overhead", fullgraph=True, dynamic=False, backend="inductor") is model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rill.compile(model) is model

    @rill.compile(dynamic=True)
    def f(x):
        return x * 2

    assert f(rill.tensor([1.0])).tolist() == [2.0]
    with pytest.raises(TypeError):
        rill.compile(3)
    with pytest.raises(RuntimeError):
        rill.compile(model, mode="default", options={})


@pytest.mark.parametrize("name", ["script", "trace", "save", "load"])
def test_jit_raises(name):
    with pytest.raises(RuntimeError, match="TorchScript.*rill.save.*rill.onnx.export"):
        getattr(rill.jit, name)(rill.nn.Linear(2, 2))


def test_jit_decorators_pass_through():
    def f(x):
        return x

    assert rill.jit.ignore(f) is f and rill.jit.unused(f) is f and rill.jit.export(f) is f
    assert rill.jit.ignore(drop=True)(f) is f
    assert rill.jit.is_scripting() is False and rill.jit.is_tracing() is False
    assert not isinstance(rill.nn.Linear(1, 1), rill.jit.ScriptModule)
