"""rill.asyncs (docs/architecture.md §3.7): Python threads bound to VM threads of their own."""
import os
import subprocess
import sys
import threading

import pytest

import rill


def _vm_thread_names():
    names = set()
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            names.add(f.read().strip())
    return names


def test_ids_are_the_lowest_free_and_freed_on_close():
    a, b = rill.asyncs.Thread(), rill.asyncs.Thread()
    assert b.id == a.id + 1
    first = a.id
    a.close()
    assert a.id is None
    c = rill.asyncs.Thread()
    assert c.id == first
    b.close()
    c.close()


def test_ids_are_freed_when_collected():
    t = rill.asyncs.Thread()
    tid = t.id
    del t
    t2 = rill.asyncs.Thread()
    assert t2.id == tid
    t2.close()


def test_limit_gives_a_clear_error():
    rill.set_env_override("RILL_VM_WORKER_THREAD_LIMIT", "3")
    try:
        held = [rill.asyncs.Thread(), rill.asyncs.Thread()]
        with pytest.raises(RuntimeError, match="RILL_VM_WORKER_THREAD_LIMIT"):
            rill.asyncs.Thread()
        for t in held:
            t.close()
    finally:
        rill.set_env_override("RILL_VM_WORKER_THREAD_LIMIT", None)


def test_contexts_nest_and_restore():
    a, b = rill.asyncs.Thread(), rill.asyncs.Thread()
    assert rill._C._asyncs_current() == 0
    with rill.asyncs.thread(a):
        assert rill._C._asyncs_current() == a.id
        with rill.asyncs.thread(b):
            assert rill._C._asyncs_current() == b.id
        assert rill._C._asyncs_current() == a.id
    assert rill._C._asyncs_current() == 0
    with pytest.raises(ValueError):
        with rill.asyncs.thread(a):
            raise ValueError("leaves the block")
    assert rill._C._asyncs_current() == 0
    a.close()
    b.close()


def test_bad_arguments():
    with pytest.raises(TypeError, match="rill.asyncs.Thread"):
        with rill.asyncs.thread(3):
            pass
    t = rill.asyncs.Thread()
    t.close()
    with pytest.raises(RuntimeError, match="closed"):
        with rill.asyncs.thread(t):
            pass


def test_user_threads_run_on_their_own_worker_and_respect_dependences():
    t = rill.asyncs.Thread()
    x = rill.arange(1000, dtype=rill.float32)  # written on thread 0
    with rill.asyncs.thread(t):
        y = x
        for _ in range(50):
            y = y + x                           # read on t's thread
    x.add_(1)                                   # thread 0 overwrites x after those reads
    assert y.tolist() == [51.0 * v for v in range(1000)]
    assert x[0].item() == 1.0
    assert f"rill-worker-{t.id}" in _vm_thread_names()  # even with RILL_VM_COMPUTE_ON_WORKER_THREAD=0
    t.close()


def test_logging_thread_pattern():
    """Metrics cloned after each step, logged by a Python thread on its own VM thread."""
    import queue
    q = queue.Queue()
    lines = []

    def logger():
        t = rill.asyncs.Thread()
        with rill.asyncs.thread(t):
            while (item := q.get()) is not None:
                step, loss = item
                lines.append(f"step {step} loss {loss.item():.1f}")
        t.close()

    th = threading.Thread(target=logger)
    th.start()
    w = rill.zeros(64)
    for step in range(50):
        w = w + 1
        q.put((step, w.sum().clone()))
    q.put(None)
    th.join()
    assert lines == [f"step {s} loss {64.0 * (s + 1):.1f}" for s in range(50)]


def test_async_logging_example_runs():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    flags = ["-S"] if sys.flags.no_site else []
    p = subprocess.run([sys.executable, *flags, os.path.join(root, "examples", "async_logging.py"), "--steps", "40"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "steps/s" in p.stdout
