"""Tensor.item() (docs/architecture.md §3.5): one C++ call through a reused SyncRead, or a direct read."""
import math

import pytest
import torch

import rill

from conftest import assert_same_error


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                   "float16", "bfloat16", "float32", "float64"])
def test_item_matches_torch_value_and_type(dtype):
    for v in (0, 1, 3, -2, 2.5, 1e30, True):
        if dtype == "bool":
            v = bool(v)
        elif "int" in dtype:
            if not isinstance(v, int) or (dtype == "uint8" and v < 0):
                continue
        t = torch.tensor([v], dtype=getattr(torch, dtype))
        r = rill.tensor([v], dtype=getattr(rill, dtype))
        got, want = (r + 0 if dtype != "bool" else r).item(), (t + 0 if dtype != "bool" else t).item()
        assert type(got) is type(want), (dtype, v)
        assert got == want or (math.isinf(want) and math.isinf(got)), (dtype, v, got, want)


def test_item_of_pending_and_finished_results():
    v = rill.arange(1000, dtype=rill.float32)
    assert (v * 2).sum().item() == 999000.0
    x = rill.zeros(1)
    for i in range(200):
        x = x + 1
        assert x.item() == i + 1


def test_finished_tensor_is_read_without_an_instruction():
    x = rill.ones(1) * 3
    rill.synchronize()
    before = rill._C._num_instructions()
    assert x.item() == 3.0
    assert rill._C._num_instructions() == before


def test_item_errors_like_torch():
    assert_same_error(lambda: rill.ones(2).item(), lambda: torch.ones(2).item())
    assert_same_error(lambda: rill.ones(0).item(), lambda: torch.ones(0).item())


def test_item_raises_a_poisoned_value_and_the_vm_goes_on():
    bad = rill.mvlgamma(rill.tensor([0.1]), 3)  # found inside the kernel: every element must exceed 1
    with pytest.raises(RuntimeError, match="must be greater than"):
        bad.sum().item()
    rill.synchronize()  # already reported by item()
    assert (rill.ones(1) + 1).item() == 2.0


def test_item_from_many_python_threads():
    import threading
    errors = []

    def work(k):
        try:
            x = rill.full((1,), float(k))
            for i in range(300):
                x = x + 1
                if x.item() != k + i + 1:
                    errors.append((k, i))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_item_timed_stages_are_ordered():
    s = (rill.arange(100000, dtype=rill.float32) * 2).sum()
    enter, submitted, ready, done, woken = rill._C._item_timed(s)
    if submitted:  # went through the VM
        assert enter <= submitted <= ready <= done <= woken
