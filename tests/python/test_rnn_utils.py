"""rill.nn.utils.rnn against torch.nn.utils.rnn: padding, packing and unpacking give torch's values."""
import numpy as np
import pytest
import torch

import rill
from rill.nn.utils import rnn as R
from torch.nn.utils import rnn as TR

rng = np.random.default_rng(0)


def seqs(lengths, feat=(3,)):
    arrays = [rng.normal(size=(n,) + feat).astype(np.float32) for n in lengths]
    return [rill.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def same(r, t):
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_array_equal(np.asarray(r.tolist()), t.numpy())


def same_packed(r, t):
    same(r.data, t.data)
    same(r.batch_sizes, t.batch_sizes)
    for a, b in [(r.sorted_indices, t.sorted_indices), (r.unsorted_indices, t.unsorted_indices)]:
        assert (a is None) == (b is None)
        if a is not None:
            same(a, b)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    r, t = seqs([2, 4, 1])
    same(R.pad_sequence(r, batch_first=batch_first, padding_value=-1.5, padding_side=side),
         TR.pad_sequence(t, batch_first=batch_first, padding_value=-1.5, padding_side=side))
    r, t = seqs([3, 2], feat=())
    same(R.pad_sequence(r), TR.pad_sequence(t))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce", [([4, 3, 3, 1], True), ([2, 4, 1, 3], False), ([2, 3, 2, 3], False)])
def test_pack_and_pad_packed(batch_first, lengths, enforce):
    r, t = seqs(lengths)
    rp, tp = R.pad_sequence(r, batch_first=batch_first), TR.pad_sequence(t, batch_first=batch_first)
    rpk = R.pack_padded_sequence(rp, lengths, batch_first=batch_first, enforce_sorted=enforce)
    tpk = TR.pack_padded_sequence(tp, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce)
    same_packed(rpk, tpk)
    for total in [None, 6]:
        ro, rl = R.pad_packed_sequence(rpk, batch_first=batch_first, padding_value=9.0, total_length=total)
        to, tl = TR.pad_packed_sequence(tpk, batch_first=batch_first, padding_value=9.0, total_length=total)
        same(ro, to)
        same(rl, tl)
    same_packed(R.pack_sequence(r, enforce_sorted=enforce), TR.pack_sequence(t, enforce_sorted=enforce))
    for a, b in zip(R.unpack_sequence(rpk), TR.unpack_sequence(tpk)):
        same(a, b)
    for a, b in zip(R.unpad_sequence(rp, rill.tensor(lengths), batch_first=batch_first),
                    TR.unpad_sequence(tp, torch.tensor(lengths), batch_first=batch_first)):
        same(a, b)


def test_packed_sequence_is_a_tuple_and_differentiable():
    x = rill.randn(3, 2, 4, requires_grad=True)
    pk = R.pack_padded_sequence(x, [3, 1])
    data, batch_sizes, sorted_indices, unsorted_indices = pk
    assert batch_sizes.tolist() == [2, 1, 1] and sorted_indices is None and unsorted_indices is None
    assert pk.to(rill.float64).data.dtype == rill.float64
    out, _ = R.pad_packed_sequence(pk)
    out.sum().backward()
    assert x.grad.tolist()[1][1] == [0.0] * 4 and x.grad.tolist()[0][1] == [1.0] * 4


def test_errors():
    r, _ = seqs([2, 3])
    with pytest.raises(RuntimeError, match="enforce_sorted"):
        R.pack_sequence(r)
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(rill.zeros(3, 2, 1), [3, 0])
    with pytest.raises(ValueError, match="batch_size"):
        R.pack_padded_sequence(rill.zeros(3, 2, 1), [3, 2, 1])
    pk = R.pack_sequence(r, enforce_sorted=False)
    with pytest.raises(ValueError, match="total_length"):
        R.pad_packed_sequence(pk, total_length=2)
    with pytest.raises(ValueError, match="padding_side"):
        R.pad_sequence(r, padding_side="middle")
    with pytest.raises(RuntimeError, match="trailing"):
        R.pad_sequence([rill.zeros(2, 3), rill.zeros(2, 4)])
    with pytest.raises(TypeError):
        R.pad_packed_sequence(rill.zeros(2))
    assert isinstance(rill.nn.LSTM(3, 4)(pk)[0], R.PackedSequence)  # test_rnn_packed.py checks the values
