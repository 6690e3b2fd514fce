"""fork() with a running VM (docs/architecture.md §3.8, Note [Fork] in src/rill/vm/fork.cpp)."""
import multiprocessing
import os
import threading
import time

import pytest

import rill


def _wait(pid, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"child {pid} did not finish within {timeout} s (deadlock?)")


@pytest.mark.parametrize("on_worker", [0, 1])
def test_fork_right_after_item(on_worker):
    # With compute on a worker, item() may return before the scheduler retires its read marker
    # (Note [Markers on a worker]); a fork right then leaves the child a marker of the parent's VM,
    # which the child must treat as free: its own reads work and give the right values.
    rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", str(on_worker))
    try:
        x = rill.zeros(1)
        for i in range(1, 21):
            x = x + 1
            assert x.item() == i
            pid = os.fork()
            if pid == 0:
                y = x
                ok = True
                for k in range(1, 6):
                    y = y + 1
                    ok = ok and y.item() == i + k
                os._exit(0 if ok else 1)
            assert _wait(pid) == 0
    finally:
        rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", None)


@pytest.mark.parametrize("heavy", ["none", "matmul", "conv"])
def test_native_thread_forks_while_the_vm_is_busy(heavy):
    # A C++ thread that never used rill forks 8 times while this thread keeps the VM busy (with
    # elementwise ops, and matmuls or convolutions running on OpenBLAS or oneDNN); it must not wait
    # for the VM, and each child computes (incl. a matmul and a convolution) with a fresh VM.
    codes = rill._C._test_fork_from_native_thread(8, heavy)
    assert codes == [0] * 8


def test_os_fork_right_after_ops():
    a = rill.arange(1000, dtype=rill.float64)
    b = (a * 2 + 1).sum()           # still in flight: the fork drains first (this thread submitted)
    c = a @ a
    pid = os.fork()
    if pid == 0:
        ok = b.item() == 1000000.0 and c.item() == sum(float(i * i) for i in range(1000))
        d = (rill.ones(3, 3) @ rill.ones(3, 3)).sum().item()   # a fresh VM in the child
        os._exit(0 if ok and d == 27.0 else 1)
    assert _wait(pid) == 0
    assert b.item() == 1000000.0


def test_child_never_replays_the_parents_queue():
    y = rill.zeros(1)
    for _ in range(1000):
        y.add_(1)
    pid = os.fork()
    if pid == 0:
        first = y.item()
        y.add_(1)
        os._exit(0 if (first, y.item()) == (1000.0, 1001.0) else 1)
    assert _wait(pid) == 0
    assert y.item() == 1000.0


def _square_sum(n):
    x = rill.arange(n, dtype=rill.float64)
    return (x * x).sum().item()


def test_multiprocessing_fork_pool():
    warm = (rill.ones(100) * 2).sum()  # the parent's VM is running with work in flight
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        got = pool.map(_square_sum, [10, 100, 1000])
    assert got == [float(sum(i * i for i in range(n))) for n in (10, 100, 1000)]
    assert warm.item() == 200.0


def test_fork_from_a_python_thread_that_never_used_rill():
    # The forking thread did not submit: no drain. Tensors whose writers were still in flight
    # are unusable in the child (a clear error), finished ones are readable, new ones compute.
    done = rill.ones(4) * 5
    rill.synchronize()
    big = rill.ones(1024, 1024)
    result = {}

    def forker():
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if done.tolist() != [5.0] * 4:
                    code = 1
                if (rill.ones(2) + 1).tolist() != [2.0, 2.0]:
                    code = 2
                try:
                    v = slow.sum().item()
                    if v != 1024.0 * 1024 * 1024:
                        code = 3
                except RuntimeError as e:
                    if "[fork]" not in str(e):
                        code = 4
            except BaseException:
                code = 5
            os._exit(code)
        result["code"] = _wait(pid)

    slow = big @ big  # tens of milliseconds of work, likely still running at the fork
    t = threading.Thread(target=forker)
    t.start()
    t.join()
    assert result["code"] == 0
    assert slow[0, 0].item() == 1024.0
