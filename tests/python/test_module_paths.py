"""rill.nn's classes live at torch.nn.modules' paths (rill.nn.modules.<file>.<Class>), so imports and pickles
that name torch's module find rill's class."""
import importlib
import inspect
import io
import pkgutil

import pytest
import torch

import rill
import rill.nn as rnn


def torch_module_classes():
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        module = importlib.import_module(f"torch.nn.modules.{info.name}")
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ and not name.startswith("_"):
                yield info.name, name


@pytest.mark.parametrize("module,name", [p for p in torch_module_classes() if hasattr(rnn, p[1])])
def test_class_at_torch_path(module, name):
    rmod = importlib.import_module(f"rill.nn.modules.{module}")
    assert getattr(rmod, name) is getattr(rnn, name)


def test_unknown_name_raises_attribute_error():
    from rill.nn.modules import activation
    with pytest.raises(AttributeError):
        activation.NoSuchLayer  # noqa: B018


def test_whole_module_pickle_from_torch():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Flatten())
    buf = io.BytesIO()
    torch.save(model, buf)
    loaded = rill.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(loaded[1]) is rnn.BatchNorm1d and type(loaded[2]) is rnn.Flatten
    x = torch.randn(5, 3)
    model.eval()
    loaded.eval()
    assert (loaded(rill.tensor(x.numpy())).detach().numpy() - model(x).detach().numpy()).__abs__().max() < 1e-6
