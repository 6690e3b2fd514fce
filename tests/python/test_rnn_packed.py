"""RNN, LSTM and GRU on PackedSequence input against PyTorch's, weights copied: output data, h_n (and c_n),
gradients; sorted and unsorted batches, bidirectional, stacked, projected, with initial states."""
import numpy as np
import pytest
import torch

import rill
from rill.nn.utils import rnn as rutils

CONFIGS = [
    ("LSTM", dict()), ("GRU", dict(bidirectional=True)), ("RNN", dict(num_layers=2)),
    ("LSTM", dict(num_layers=2, bidirectional=True)), ("LSTM", dict(proj_size=2, bidirectional=True)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)), ("GRU", dict(num_layers=2, batch_first=True)),
]


def build(kind, kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 4, **kw).double()
    rm = getattr(rill.nn, kind)(3, 4, **kw).double()
    rm.load_state_dict({k: rill.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return rm, tm


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_packed_like_torch(kind, kw, with_hx, enforce_sorted):
    rm, tm = build(kind, kw)
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    batch_first = kw.get("batch_first", False)
    x = np.random.default_rng(1).standard_normal((4, 5, 3) if batch_first else (5, 4, 3))
    rx, tx = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    rp = rutils.pack_padded_sequence(rx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    rhx = thx = None
    if with_hx:
        d = 2 if kw.get("bidirectional") else 1
        n = kw.get("num_layers", 1) * d
        h = np.random.default_rng(2).standard_normal((n, 4, kw.get("proj_size") or 4))
        c = np.random.default_rng(3).standard_normal((n, 4, 4))
        rhx, thx = ((rill.tensor(h), rill.tensor(c)), (torch.tensor(h), torch.tensor(c))) if kind == "LSTM" \
            else (rill.tensor(h), torch.tensor(h))
    rout, rstate = rm(rp, rhx)
    tout, tstate = tm(tp, thx)
    assert isinstance(rout, rutils.PackedSequence)
    np.testing.assert_allclose(rout.data.detach().numpy(), tout.data.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert rout.batch_sizes.tolist() == tout.batch_sizes.tolist()
    rstates = rstate if kind == "LSTM" else (rstate,)
    tstates = tstate if kind == "LSTM" else (tstate,)
    for r, t in zip(rstates, tstates):
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    (rout.data.sum() + sum(s.sum() for s in rstates)).backward()
    (tout.data.sum() + sum(s.sum() for s in tstates)).backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    padded, lens = rutils.pad_packed_sequence(rout, batch_first=batch_first)
    tpadded, tlens = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=batch_first)
    np.testing.assert_allclose(padded.detach().numpy(), tpadded.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_packed_bad_input():
    rm, _ = build("LSTM", {})
    packed = rutils.pack_sequence([rill.ones(3, 2)])
    with pytest.raises(RuntimeError, match="input_size=3"):
        rm(packed)
    with pytest.raises(TypeError, match="PackedSequence"):
        rm([1, 2, 3])
