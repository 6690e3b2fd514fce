"""rill.utils.data: datasets, samplers, default collate (against torch's), DataLoader in this process and with
forked workers, random_split, and tensors crossing process boundaries."""
import collections
import os
import pickle

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import rill
from conftest import DTYPES, assert_close, make_array, rill_from_numpy, to_torch
from rill.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, SequentialSampler, Subset,
    TensorDataset, default_collate, get_worker_info, random_split,
)


def _ds(n=10):
    return TensorDataset(rill.arange(n * 2, dtype=rill.float32).reshape(n, 2), rill.arange(n))


def _labels(loader):
    return [b[1].tolist() for b in loader]


def test_tensor_dataset():
    ds = _ds()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(rill.zeros(3), rill.zeros(4))


def test_sequential_batches_drop_last_and_len():
    loader = DataLoader(_ds(), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].dtype == rill.int64 and isinstance(batches[0], list)
    dl = DataLoader(_ds(), batch_size=4, drop_last=True)
    assert len(dl) == 2 and _labels(dl) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_seedable():
    def order(**kw):
        return sum(_labels(DataLoader(_ds(20), batch_size=5, shuffle=True, **kw)), [])
    a = order(generator=rill.Generator().manual_seed(7))
    b = order(generator=rill.Generator().manual_seed(7))
    c = order(generator=rill.Generator().manual_seed(8))
    assert a == b and a != c and sorted(a) == list(range(20))
    rill.manual_seed(3)
    d = order()
    rill.manual_seed(3)
    e = order()
    assert d == e and sorted(d) == list(range(20))
    g = rill.Generator().manual_seed(1)
    loader = DataLoader(_ds(20), batch_size=20, shuffle=True, generator=g)
    assert _labels(loader) != _labels(loader)  # a new order each epoch
    assert g.initial_seed() == 1


def test_samplers_and_argument_checks():
    ds = _ds()
    assert list(SequentialSampler(ds)) == list(range(10))
    rs = list(RandomSampler(ds, generator=rill.Generator().manual_seed(0)))
    assert sorted(rs) == list(range(10))
    with_repl = list(RandomSampler(ds, replacement=True, num_samples=30, generator=rill.Generator().manual_seed(0)))
    assert len(with_repl) == 30 and all(0 <= i < 10 for i in with_repl)
    bs = BatchSampler(SequentialSampler(ds), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    assert _labels(DataLoader(ds, batch_sampler=[[9, 0], [5]])) == [[9, 0], [5]]
    assert _labels(DataLoader(ds, sampler=[2, 4, 6], batch_size=2)) == [[2, 4], [6]]
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(SequentialSampler(ds), 0, False)
    assert DataLoader(ds, pin_memory=True, batch_size=5).pin_memory


def test_no_batching():
    loader = DataLoader([np.arange(3), np.ones(2)], batch_size=None)
    items = list(loader)
    assert isinstance(items[0], rill.Tensor) and items[0].tolist() == [0, 1, 2]


Point = collections.namedtuple("Point", ["x", "y"])


def _same_structure(r, t):
    if isinstance(t, torch.Tensor):
        assert isinstance(r, rill.Tensor), type(r)
        assert_close(r, t, rtol=0, atol=0)
    elif isinstance(t, dict):
        assert type(r) is type(t) and list(r) == list(t)
        for k in t:
            _same_structure(r[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(r) is type(t) and len(r) == len(t)
        for a, b in zip(r, t):
            _same_structure(a, b)
    else:
        assert r == t


def test_default_collate_matches_torch():
    samples = [
        {"img": np.full((2, 2), i, dtype=np.float32), "label": i, "w": 0.5 * i, "flag": i % 2 == 0,
         "name": f"s{i}", "pair": (i, np.int16(i)), "pt": Point(i, float(i)), "np64": np.float64(i)}
        for i in range(3)
    ]
    r = default_collate(samples)
    t = tdata.default_collate(samples)
    _same_structure(r, t)
    tensors = [rill.tensor([1.0, 2.0]) * i for i in range(4)]
    stacked = default_collate(tensors)
    assert tuple(stacked.shape) == (4, 2) and stacked[3].tolist() == [3.0, 6.0]
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])


class _SquareDataset(Dataset):
    """Computes with rill in __getitem__ (so the workers run ops after fork)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = rill.full((3,), float(i)) * rill.ones(3)
        info = get_worker_info()
        wid = -1 if info is None else info.id
        return x * x, i, wid, os.getpid()


def test_workers_give_the_same_batches_in_order():
    base = DataLoader(_SquareDataset(23), batch_size=4)
    forked = DataLoader(_SquareDataset(23), batch_size=4, num_workers=2, pin_memory=True)
    assert len(forked) == len(base) == 6
    got, want = list(forked), list(base)
    assert len(got) == 6
    for g, w in zip(got, want):
        assert g[0].tolist() == w[0].tolist() and g[1].tolist() == w[1].tolist()
    worker_ids = sorted({wid for b in got for wid in b[2].tolist()})
    assert worker_ids == [0, 1]
    assert os.getpid() not in {p for b in got for p in b[3].tolist()}
    assert {wid for b in want for wid in b[2].tolist()} == {-1}
    # a second epoch from the same loader, shuffled, covers everything once
    shuffled = DataLoader(_SquareDataset(23), batch_size=5, shuffle=True, num_workers=3,
                          generator=rill.Generator().manual_seed(0))
    labels = sum((b[1].tolist() for b in shuffled), [])
    assert sorted(labels) == list(range(23))
    labels2 = sum((b[1].tolist() for b in shuffled), [])
    assert sorted(labels2) == list(range(23)) and labels2 != labels


_init_calls = []


class _InitDataset(Dataset):
    tag = None

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.tag, get_worker_info().seed, rill.rand(1).item()


def _worker_init(worker_id):
    _InitDataset.tag = 100 + worker_id


def test_worker_init_fn_and_seeds():
    loader = DataLoader(_InitDataset(), batch_size=1, num_workers=2, worker_init_fn=_worker_init)
    out = list(loader)
    tags = [b[0].item() for b in out]
    assert tags == [100, 101, 100, 101]
    seeds = {b[1].item() for b in out}
    assert len(seeds) == 2
    rands = [b[2].item() for b in out]
    assert len(set(rands)) == 4  # each worker seeds rill's generator differently


class _Broken(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"bad index {i}")
        return i


def test_worker_exception_is_reraised():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process") as err:
        list(DataLoader(_Broken(), batch_size=2, num_workers=2))
    assert "bad index 5" in str(err.value)
    with pytest.raises(KeyError, match="bad index 5"):
        list(DataLoader(_Broken(), batch_size=2))


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    assert _labels_flat(DataLoader(_Stream(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(_Stream(7), batch_size=3)) == 3
    assert _labels_flat(DataLoader(_Stream(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    for n, workers, batch in [(11, 2, 2), (10, 3, 2), (5, 4, 3), (1, 3, 1), (40, 3, 1)]:
        got = _labels_flat(DataLoader(_Stream(n), batch_size=batch, num_workers=workers))
        assert sorted(sum(got, [])) == list(range(n)), (n, workers, batch)
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(_Stream(3), shuffle=True)


def _labels_flat(loader):
    return [b.tolist() for b in loader]


def test_random_split_subset_concat():
    ds = _ds(10)
    a, b = random_split(ds, [7, 3], generator=rill.Generator().manual_seed(42))
    a2, b2 = random_split(ds, [7, 3], generator=rill.Generator().manual_seed(42))
    assert len(a) == 7 and len(b) == 3 and a.indices == a2.indices
    assert sorted(a.indices + b.indices) == list(range(10))
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=rill.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    s = Subset(ds, [9, 1])
    assert len(s) == 2 and s[0][1].item() == 9
    c = ConcatDataset([s, _ds(3)])
    assert len(c) == 5 and c[2][1].item() == 0 and c[-1][1].item() == 2
    assert _labels(DataLoader(a, batch_size=7)) == [a.indices]


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensors_pickle_across_processes(dtype):
    t = rill_from_numpy(make_array((3, 4), dtype), dtype)
    views = [t, t.t(), t[1:, ::2], t[0, 0]]
    for v in views:
        got = pickle.loads(pickle.dumps(v))
        assert got.dtype == v.dtype and tuple(got.shape) == tuple(v.shape)
        assert_close(got, to_torch(v), rtol=0, atol=0)
    w = rill.ones(2, requires_grad=True)
    assert pickle.loads(pickle.dumps(w)).requires_grad
    with pytest.raises(RuntimeError, match="non-leaf"):
        pickle.dumps(w * 2)


def test_compat_imports():
    import rill.utils.data as d
    from rill.utils.data import DataLoader as DL, TensorDataset as TD  # noqa: F401
    assert d.DataLoader is DL and TD is TensorDataset
