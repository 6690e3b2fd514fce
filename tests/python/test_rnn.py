"""nn.RNN, nn.LSTM, nn.GRU and their cells against PyTorch's: the same parameter names and shapes, and with
PyTorch's weights copied in, the same outputs, final states and gradients (input, initial state, every
parameter) over layers, directions, batch_first, bias, unbatched input, initial states, proj_size and dropout."""
import itertools

import numpy as np
import pytest
import torch

import rill
from conftest import assert_close

TOL = dict(rtol=1e-10, atol=1e-12)


def copied(torch_module, rill_cls, *args, **kwargs):
    """A rill module of rill_cls(*args, **kwargs) holding torch_module's parameters."""
    module = rill_cls(*args, **kwargs).double()
    module.load_state_dict({k: rill.tensor(v.detach().numpy().copy()) for k, v in torch_module.state_dict().items()})
    return module


def leaf_pair(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return rill.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def flat(x):
    return [t for v in x for t in flat(v)] if isinstance(x, (tuple, list)) else [x]


def check_same(rill_module, torch_module, rill_args, torch_args):
    """Outputs equal; then gradients of the sum of every output equal for each leaf and parameter."""
    r_out, t_out = flat(rill_module(*rill_args)), flat(torch_module(*torch_args))
    assert len(r_out) == len(t_out)
    for r, t in zip(r_out, t_out):
        assert_close(r.detach(), t.detach(), **TOL)
    sum(t.sum() for t in t_out).backward()
    total = r_out[0].sum()
    for r in r_out[1:]:
        total = total + r.sum()
    total.backward()
    for r, t in zip(flat(rill_args), flat(torch_args)):
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf:
            assert_close(r.grad, t.grad, **TOL)
    r_params = dict(rill_module.named_parameters())
    for name, p in torch_module.named_parameters():
        assert_close(r_params[name].grad, p.grad, **TOL)


CONFIGS = list(itertools.product(["RNN", "LSTM", "GRU"], [1, 2], [False, True], [False, True], [True, False]))


@pytest.mark.parametrize("mode,num_layers,bidirectional,batch_first,bias", CONFIGS)
def test_matches_torch(mode, num_layers, bidirectional, batch_first, bias):
    kwargs = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias)
    torch.manual_seed(0)
    t_mod = getattr(torch.nn, mode)(3, 4, **kwargs).double()
    r_mod = copied(t_mod, getattr(rill.nn, mode), 3, 4, **kwargs)
    r_x, t_x = leaf_pair((2, 5, 3) if batch_first else (5, 2, 3), seed=1)
    check_same(r_mod, t_mod, [r_x], [t_x])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_initial_state_and_its_gradient(mode):
    torch.manual_seed(1)
    t_mod = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=True).double()
    r_mod = copied(t_mod, getattr(rill.nn, mode), 3, 4, num_layers=2, bidirectional=True)
    r_x, t_x = leaf_pair((5, 2, 3), seed=2)
    r_h, t_h = leaf_pair((4, 2, 4), seed=3)
    if mode == "LSTM":
        r_c, t_c = leaf_pair((4, 2, 4), seed=4)
        check_same(r_mod, t_mod, [r_x, (r_h, r_c)], [t_x, (t_h, t_c)])
    else:
        check_same(r_mod, t_mod, [r_x, r_h], [t_x, t_h])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(mode):
    torch.manual_seed(2)
    t_mod = getattr(torch.nn, mode)(3, 4, num_layers=2).double()
    r_mod = copied(t_mod, getattr(rill.nn, mode), 3, 4, num_layers=2)
    r_x, t_x = leaf_pair((5, 3), seed=5)
    r_h, t_h = leaf_pair((2, 4), seed=6)
    hx = ((r_h, r_h * 0.5), (t_h, t_h * 0.5)) if mode == "LSTM" else (r_h, t_h)
    check_same(r_mod, t_mod, [r_x, hx[0]], [t_x, hx[1]])


def test_relu_nonlinearity():
    torch.manual_seed(3)
    t_mod = torch.nn.RNN(3, 4, nonlinearity="relu").double()
    r_mod = copied(t_mod, rill.nn.RNN, 3, 4, nonlinearity="relu")
    r_x, t_x = leaf_pair((5, 2, 3), seed=7)
    check_same(r_mod, t_mod, [r_x], [t_x])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_projection(bidirectional):
    torch.manual_seed(4)
    t_mod = torch.nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=bidirectional).double()
    r_mod = copied(t_mod, rill.nn.LSTM, 3, 5, num_layers=2, proj_size=2, bidirectional=bidirectional)
    assert [n for n, _ in r_mod.named_parameters()] == [n for n, _ in t_mod.named_parameters()]
    r_x, t_x = leaf_pair((4, 2, 3), seed=8)
    check_same(r_mod, t_mod, [r_x], [t_x])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_parameter_names_and_shapes_match_torch(mode):
    kwargs = dict(num_layers=2, bidirectional=True, bias=True)
    t_shapes = {n: tuple(p.shape) for n, p in getattr(torch.nn, mode)(3, 4, **kwargs).named_parameters()}
    r_shapes = {n: tuple(p.shape) for n, p in getattr(rill.nn, mode)(3, 4, **kwargs).named_parameters()}
    assert list(r_shapes) == list(t_shapes)
    assert r_shapes == t_shapes
    assert "weight_ih_l1_reverse" in r_shapes


def test_initial_weights_lie_in_torch_bounds():
    mod = rill.nn.LSTM(3, 16)
    for p in mod.parameters():
        assert np.abs(p.detach().numpy()).max() <= 1 / 4
    assert mod.weight_ih_l0.dtype == rill.float32


def test_dropout_between_layers():
    torch.manual_seed(5)
    t_mod = torch.nn.GRU(3, 4, num_layers=3, dropout=1.0).double()
    r_mod = copied(t_mod, rill.nn.GRU, 3, 4, num_layers=3, dropout=1.0)
    r_x, t_x = leaf_pair((5, 2, 3), seed=9)
    check_same(r_mod, t_mod, [r_x], [t_x])  # p=1 zeroes every layer's input after the first: deterministic
    r_mod.eval()
    t_mod.eval()
    assert_close(r_mod(r_x)[0].detach(), t_mod(t_x)[0].detach(), **TOL)
    r_mod.train()
    out = rill.nn.LSTM(3, 4, num_layers=2, dropout=0.5)(rill.randn(5, 2, 3))[0]
    assert tuple(out.shape) == (5, 2, 4)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_torch(cell, batched, bias):
    torch.manual_seed(6)
    t_cell = getattr(torch.nn, cell)(3, 4, bias=bias).double()
    r_cell = copied(t_cell, getattr(rill.nn, cell), 3, 4, bias=bias)
    shape = (2,) if batched else ()
    r_x, t_x = leaf_pair(shape + (3,), seed=10)
    r_h, t_h = leaf_pair(shape + (4,), seed=11)
    if cell == "LSTMCell":
        r_c, t_c = leaf_pair(shape + (4,), seed=12)
        check_same(r_cell, t_cell, [r_x, (r_h, r_c)], [t_x, (t_h, t_c)])
    else:
        check_same(r_cell, t_cell, [r_x, r_h], [t_x, t_h])


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_default_to_zero_state(cell):
    torch.manual_seed(7)
    t_cell = getattr(torch.nn, cell)(3, 4).double()
    r_cell = copied(t_cell, getattr(rill.nn, cell), 3, 4)
    r_x, t_x = leaf_pair((2, 3), seed=13)
    check_same(r_cell, t_cell, [r_x], [t_x])


def test_a_sequence_model_trains_like_torch():
    torch.manual_seed(8)
    t_mod = torch.nn.LSTM(3, 4, batch_first=True).double()
    r_mod = copied(t_mod, rill.nn.LSTM, 3, 4, batch_first=True)
    t_opt = torch.optim.SGD(t_mod.parameters(), lr=0.1)
    r_opt = rill.optim.SGD(r_mod.parameters(), lr=0.1)
    x = np.random.default_rng(14).standard_normal((2, 6, 3))
    for _ in range(3):
        t_opt.zero_grad()
        r_opt.zero_grad()
        t_loss = t_mod(torch.tensor(x))[0].pow(2).mean()
        r_loss = r_mod(rill.tensor(x))[0].pow(2).mean()
        t_loss.backward()
        r_loss.backward()
        t_opt.step()
        r_opt.step()
        assert abs(r_loss.item() - t_loss.item()) < 1e-12


@pytest.mark.parametrize("build,error,match", [
    (lambda: rill.nn.GRU(3, 4, proj_size=2), ValueError, "proj_size"),
    (lambda: rill.nn.LSTM(3, 4, proj_size=4), ValueError, "smaller than hidden_size"),
    (lambda: rill.nn.RNN(3, 4, nonlinearity="gelu"), ValueError, "nonlinearity"),
    (lambda: rill.nn.RNN(3, 4, dropout=1.5), ValueError, "dropout"),
    (lambda: rill.nn.LSTM(3, 0), ValueError, "hidden_size"),
    (lambda: rill.nn.RNNCell(3, 4, nonlinearity="gelu"), ValueError, "nonlinearity"),
])
def test_bad_arguments_raise_like_torch(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_inputs_raise_like_torch():
    for mod, t_mod in ((rill.nn.LSTM(3, 4), torch.nn.LSTM(3, 4)), (rill.nn.GRU(3, 4), torch.nn.GRU(3, 4))):
        with pytest.raises(RuntimeError, match="hidden size"):
            mod(rill.randn(5, 2, 3), (rill.zeros(1, 3, 4), rill.zeros(1, 3, 4)) if isinstance(
                mod, rill.nn.LSTM) else rill.zeros(1, 3, 4))
        with pytest.raises(RuntimeError):
            t_mod(torch.randn(5, 2, 3), (torch.zeros(1, 3, 4), torch.zeros(1, 3, 4)) if isinstance(
                t_mod, torch.nn.LSTM) else torch.zeros(1, 3, 4))
        with pytest.raises(ValueError, match="2D or 3D"):
            mod(rill.randn(5, 2, 3, 1))
        with pytest.raises(RuntimeError, match="input_size"):
            mod(rill.randn(5, 2, 7))


def test_importable_from_torch_paths():
    from rill.nn.modules.rnn import LSTM
    assert LSTM is rill.nn.LSTM
    assert "num_layers=2" in repr(rill.nn.GRU(3, 4, num_layers=2))
    rill.nn.LSTM(3, 4).flatten_parameters()
