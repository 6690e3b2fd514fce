import pytest

from rill.utils.data.distributed import DistributedSampler


def shares(n, replicas, **kw):
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw)) for r in range(replicas)]


def test_no_shuffle_pads_with_the_start():
    assert shares(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]


def test_drop_last_drops_the_tail():
    assert shares(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]


def test_padding_longer_than_the_dataset():
    assert shares(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]


def test_shuffle_covers_every_index_once_and_follows_the_epoch():
    s = shares(12, 4, seed=3)
    assert sorted(i for part in s for i in part) == list(range(12))
    assert all(len(part) == 3 for part in s)
    again = shares(12, 4, seed=3)
    assert s == again
    samplers = [DistributedSampler(range(12), num_replicas=4, rank=r, seed=3) for r in range(4)]
    for sm in samplers:
        sm.set_epoch(1)
    moved = [list(sm) for sm in samplers]
    assert moved != s
    assert sorted(i for part in moved for i in part) == list(range(12))


def test_len():
    assert len(DistributedSampler(range(10), num_replicas=3, rank=0)) == 4
    assert len(DistributedSampler(range(10), num_replicas=3, rank=0, drop_last=True)) == 3


@pytest.mark.parametrize("kw", [dict(num_replicas=2, rank=2), dict(num_replicas=0, rank=0)])
def test_bad_arguments(kw):
    with pytest.raises(ValueError):
        DistributedSampler(range(4), **kw)


def test_without_a_process_group_num_replicas_and_rank_are_needed():
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4), rank=0)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (12, 4, False),
                                                  (7, 2, True)])
def test_matches_pytorch_without_shuffle(n, replicas, drop_last):
    tdist = pytest.importorskip("torch.utils.data.distributed")
    want = [list(tdist.DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=False,
                                          drop_last=drop_last)) for r in range(replicas)]
    assert shares(n, replicas, shuffle=False, drop_last=drop_last) == want
