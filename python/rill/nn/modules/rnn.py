"""RNN, LSTM, GRU and their cells, composed from linear, sigmoid, tanh, stack and cat.

Parameters, their names, shapes and order are PyTorch's (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``weight_hr_l0`` for an LSTM's projection, ``_reverse`` for the
backward direction), so state dicts move between the two unchanged, and so are the gate orders
(LSTM: input, forget, cell, output; GRU: reset, update, new). Each time step is a few ops issued
from Python; the input-to-hidden products of a whole layer are one matmul before the loop.
"""
import math
import numbers

import rill
from rill.nn import functional as F
from rill.nn import init
from rill.nn.modules.linear import _factory
from rill.nn.modules.module import Module
from rill.nn.parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(activation):
    def step(gi, h, c, w_hh, b_hh, w_hr):
        return activation(gi + F.linear(h, w_hh, b_hh)), None
    return step


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr):
    i, f, g, o = (gi + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = rill.sigmoid(f) * c + rill.sigmoid(i) * rill.tanh(g)
    h = rill.sigmoid(o) * rill.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gi, h, c, w_hh, b_hh, w_hr):
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = rill.sigmoid(i_r + h_r)
    z = rill.sigmoid(i_z + h_z)
    n = rill.tanh(i_n + r * h_n)
    return n + z * (h - n), None


_STEPS = {"RNN_TANH": _rnn_step(rill.tanh), "RNN_RELU": _rnn_step(rill.relu), "LSTM": _lstm_step, "GRU": _gru_step}


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrence shared by RNN, LSTM and GRU (torch.nn.RNNBase)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        dtype = _factory(device, dtype)
        name = type(self).__name__
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError(f"[{name}] dropout should be a number in range [0, 1] representing the probability of "
                             f"an element being zeroed, got {dropout!r}")
        for what, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"[{name}] {what} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"[{name}] {what} must be greater than zero, got {value}")
        if proj_size < 0:
            raise ValueError(f"[{name}] proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError(f"[{name}] proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError(f"[{name}] proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for kind, shape in shapes:
                    setattr(self, kind + suffix, Parameter(rill.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(kind + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)], as PyTorch's."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op: rill keeps no fused weight buffer (PyTorch's compacts weights for cuDNN)."""

    @property
    def all_weights(self):
        """Per layer and direction, the list of that step's parameters, in PyTorch's order."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda kind: getattr(self, kind + suffix, None)  # noqa: E731
        return get("weight_ih"), get("bias_ih"), get("weight_hh"), get("bias_hh"), get("weight_hr")

    def _initial_state(self, hx, batch, dtype, batched):
        """(h0, c0 or None), each (layers * directions, batch, size), from hx or zeros."""
        name = type(self).__name__
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size or self.hidden_size
        sizes = [real_hidden, self.hidden_size] if self.mode == "LSTM" else [real_hidden]
        if hx is None:
            states = [rill.zeros(self.num_layers * directions, batch, s, dtype=dtype) for s in sizes]
        else:
            states = list(hx) if self.mode == "LSTM" else [hx]
            if self.mode == "LSTM" and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise TypeError(f"[{name}] hx should be a tuple (h_0, c_0) of two tensors")
            for i, (state, size) in enumerate(zip(states, sizes)):
                if not isinstance(state, rill.Tensor):
                    raise TypeError(f"[{name}] the initial state should be a Tensor, got {type(state).__name__}")
                if state.dim() != (3 if batched else 2):
                    raise RuntimeError(f"[{name}] for {'batched 3-D' if batched else 'unbatched 2-D'} input, hx "
                                       f"should also be {3 if batched else 2}-D but got {state.dim()}-D tensor")
                if not batched:
                    state = state.unsqueeze(1)
                want = (self.num_layers * directions, batch, size)
                if tuple(state.shape) != want:
                    what = "hidden" if i == 0 else "cell"
                    raise RuntimeError(f"[{name}] Expected {what} size {want}, got {tuple(state.shape)}")
                states[i] = state
        return states[0], (states[1] if self.mode == "LSTM" else None)

    def forward(self, input, hx=None):
        name = type(self).__name__
        from rill.nn.utils.rnn import PackedSequence  # here: rill.nn.utils imports the modules
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if not isinstance(input, rill.Tensor):
            raise TypeError(f"[{name}] expected a Tensor or a PackedSequence as input, got {type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"[{name}] Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[2] != self.input_size:
            raise RuntimeError(f"[{name}] input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[2]}")
        steps, batch = input.shape[0], input.shape[1]
        h0, c0 = self._initial_state(hx, batch, input.dtype, batched)
        step = _STEPS[self.mode]
        directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, direction)
                gi = F.linear(layer_input, w_ih, b_ih)  # every time step's input product at once
                index = layer * directions + direction
                h, c = h0[index], (c0[index] if c0 is not None else None)
                out = [None] * steps
                for t in (reversed(range(steps)) if direction else range(steps)):
                    h, c = step(gi[t], h, c, w_hh, b_hh, w_hr)
                    out[t] = h
                outputs.append(rill.stack(out, 0))
                h_n.append(h)
                c_n.append(c)
            layer_input = outputs[0] if directions == 1 else rill.cat(outputs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        output, h_n = layer_input, rill.stack(h_n, 0)
        c_n = rill.stack(c_n, 0) if self.mode == "LSTM" else None
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _forward_packed(self, packed, hx):
        """forward on a PackedSequence: at time step t the first batch_sizes[t] sequences (sorted longest first)
        are live; a sequence's final state is the one after its last element (the reverse direction starts each
        sequence from h0 at that element). hx and the returned states are in the caller's batch order."""
        name = type(self).__name__
        data, sorted_indices, unsorted_indices = packed.data, packed.sorted_indices, packed.unsorted_indices
        if data.dim() != 2 or data.shape[1] != self.input_size:
            raise RuntimeError(f"[{name}] packed input data must be (total, input_size={self.input_size}), got "
                               f"{tuple(data.shape)}")
        sizes = [int(b) for b in packed.batch_sizes.tolist()]
        offsets = [0]
        for b in sizes:
            offsets.append(offsets[-1] + b)
        batch = sizes[0]
        if hx is not None and sorted_indices is not None:
            hx = tuple(h.index_select(1, sorted_indices) for h in hx) if self.mode == "LSTM" \
                else hx.index_select(1, sorted_indices)
        h0, c0 = self._initial_state(hx, batch, data.dtype, True)
        step = _STEPS[self.mode]
        directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, direction)
                gi = F.linear(layer_input, w_ih, b_ih)
                index = layer * directions + direction
                h_init, c_init = h0[index], (c0[index] if c0 is not None else None)
                out = [None] * len(sizes)
                if direction == 0:
                    h, c = h_init, c_init
                    for t, b in enumerate(sizes):
                        nh, nc = step(gi[offsets[t]:offsets[t + 1]], h[:b], c[:b] if c is not None else None,
                                      w_hh, b_hh, w_hr)
                        out[t] = nh
                        h = nh if b == batch else rill.cat([nh, h[b:]], 0)  # finished sequences keep their state
                        if c is not None:
                            c = nc if b == batch else rill.cat([nc, c[b:]], 0)
                else:
                    h = c = None
                    live = 0
                    for t in reversed(range(len(sizes))):
                        b = sizes[t]
                        if b > live:  # sequences whose last element is at t start here from h0
                            h = h_init[live:b] if h is None else rill.cat([h, h_init[live:b]], 0)
                            if c_init is not None:
                                c = c_init[live:b] if c is None else rill.cat([c, c_init[live:b]], 0)
                            live = b
                        h, c = step(gi[offsets[t]:offsets[t + 1]], h, c, w_hh, b_hh, w_hr)
                        out[t] = h
                outputs.append(rill.cat(out, 0))
                h_n.append(h)
                c_n.append(c)
            layer_input = outputs[0] if directions == 1 else rill.cat(outputs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        h_n = rill.stack(h_n, 0)
        c_n = rill.stack(c_n, 0) if self.mode == "LSTM" else None
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        return packed._with_data(layer_input), ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu), as torch.nn.RNN."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, proj_size=0):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"[RNN] Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, proj_size, device, dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", nonlinearity={self.nonlinearity!r}" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """Long short-term memory, with an optional projection of h (proj_size), as torch.nn.LSTM.

    forward(input, (h_0, c_0)=None) returns (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit, as torch.nn.GRU."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, proj_size=0):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class RNNCellBase(Module):
    """One time step's parameters: weight_ih (gates * hidden, input), weight_hh, bias_ih, bias_hh."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        dtype = _factory(device, dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(rill.empty(num_chunks * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(rill.empty(num_chunks * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(rill.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(rill.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)], as PyTorch's."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _batch(self, input, states):
        """(input, states, batched): 1-D input and states made a batch of one; missing states zeros."""
        name = type(self).__name__
        if not isinstance(input, rill.Tensor) or input.dim() not in (1, 2):
            raise ValueError(f"[{name}] Expected input to be 1D or 2D, got "
                             f"{input.dim() if isinstance(input, rill.Tensor) else type(input).__name__}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        out = []
        for s in states:
            if s is None:
                s = rill.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            elif s.dim() != (2 if batched else 1):
                raise RuntimeError(f"[{name}] {'Batched' if batched else 'Unbatched'} input expects a "
                                   f"{2 if batched else 1}-D hidden state, got {s.dim()}-D")
            elif not batched:
                s = s.unsqueeze(0)
            out.append(s)
        return input, out, batched

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        return s


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu), as torch.nn.RNNCell."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"[RNNCell] Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, (h,), batched = self._batch(input, [hx])
        activation = rill.tanh if self.nonlinearity == "tanh" else rill.relu
        h, _ = _rnn_step(activation)(F.linear(input, self.weight_ih, self.bias_ih), h, None, self.weight_hh,
                                     self.bias_hh, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: forward(input, (h, c)=None) returns (h', c'), as torch.nn.LSTMCell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("[LSTMCell] hx should be a tuple (h, c) of two tensors")
        input, (h, c), batched = self._batch(input, [None, None] if hx is None else list(hx))
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step, as torch.nn.GRUCell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._batch(input, [hx])
        h, _ = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)
