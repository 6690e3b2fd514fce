"""The threaded VM (docs/architecture.md §3): same results as synchronous mode, errors at
sync points with the op and the issuing line, Ctrl-C during a wait, exit with
queued work, several client threads, flat memory, back-pressure."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import rill


@pytest.fixture
def knob():
    """Set RILL_* overrides for one test and remove them afterwards."""
    names = []

    def set_(name, value):
        names.append(name)
        rill.set_env_override(name, None if value is None else str(value))
    yield set_
    rill.synchronize()
    for n in names:
        rill.set_env_override(n, None)


# --- randomized differential test ------------------------------------------------------------

def random_program(seed):
    """A random straight-line program over a few tensors: out-of-place and in-place ops,
    views written through, scalar ops, reductions, matmul, and tensors dropped early."""
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    env = {f"t{i}": rill.tensor(np_rng.standard_normal((4, 4)).astype(np.float32)) for i in range(4)}
    for step in range(60):
        names = list(env)
        a, b = env[rng.choice(names)], env[rng.choice(names)]
        kind = rng.randrange(10)
        if kind == 0:
            r = a + b
        elif kind == 1:
            r = a * rng.uniform(-2, 2) - b
        elif kind == 2:
            r = (a @ b) * 0.1
        elif kind == 3:
            a.add_(b, alpha=0.5)
            continue
        elif kind == 4:
            a.T[rng.randrange(4)] = b[rng.randrange(4)]   # write through a transposed view
            continue
        elif kind == 5:
            r = a.tanh().exp()
        elif kind == 6:
            r = a.sum(dim=rng.choice([0, 1]), keepdim=True).expand(4, 4) + b
        elif kind == 7:
            r = rill.where(a > b, a, b.relu())
        elif kind == 8:
            a.mul_(0.9)
            continue
        else:
            victim = rng.choice(names)
            if len(env) > 2:
                del env[victim]   # dropped while instructions that use it may still be queued
            continue
        env[f"s{step}"] = r
    return {k: v.numpy().copy() for k, v in env.items()}


@pytest.mark.parametrize("seed", range(12))
def test_threaded_vm_matches_synchronous_mode(seed, knob):
    knob("RILL_VM_MULTI_THREAD", 0)
    expected = random_program(seed)
    knob("RILL_VM_MULTI_THREAD", 1)
    for on_worker in (0, 1):
        knob("RILL_VM_COMPUTE_ON_WORKER_THREAD", on_worker)
        got = random_program(seed)
        assert got.keys() == expected.keys()
        for k in got:
            np.testing.assert_array_equal(got[k], expected[k], err_msg=f"seed {seed}, tensor {k}")


# --- errors ------------------------------------------------------------------------------------

def test_kernel_error_poisons_dependents_and_names_the_line():
    base = rill.tensor([2.0, 3.0, 4.0])
    bad = rill.mvlgamma(base - 2, 3)  # every element must exceed (p - 1) / 2: found inside the kernel
    line = sys._getframe().f_lineno - 1
    later = bad + 1    # computed from a poisoned tensor: poisoned too
    fine = base * 2    # unrelated: stays valid
    assert fine.tolist() == [4.0, 6.0, 8.0]
    with pytest.raises(RuntimeError) as e:
        later.tolist()
    msg = str(e.value)
    assert "[mvlgamma]" in msg and "float32[3]" in msg
    assert f"test_vm.py:{line}" in msg
    with pytest.raises(RuntimeError):
        bad.item() if bad.numel() == 1 else bad.numpy()
    # The VM keeps running.
    assert (rill.ones(2) + 1).tolist() == [2.0, 2.0]


def test_synchronize_reports_an_unread_error_once():
    rill.synchronize()
    _ = rill.mvlgamma(rill.tensor([0.1]), 3)
    with pytest.raises(RuntimeError, match="must be greater than"):
        rill.synchronize()
    rill.synchronize()  # reported already


def test_synchronous_mode_raises_at_the_issuing_line(knob):
    knob("RILL_VM_MULTI_THREAD", 0)
    with pytest.raises(RuntimeError, match="must be greater than"):
        rill.mvlgamma(rill.tensor([0.1]), 3)


# --- Ctrl-C, exit, threads, memory -------------------------------------------------------------

def test_keyboard_interrupt_during_a_long_wait_leaves_the_vm_usable():
    # The wait itself is what Ctrl-C interrupts; with RILL_VM_WAITER_RUNS_QUEUED on, a loaded machine may run the
    # queued matmuls on this thread instead (at submission or at the sync point), where the interrupt is taken
    # only once they finish (README, Environment knobs). Run in a fresh process, with Python's SIGINT handler
    # installed (see below).
    code = textwrap.dedent("""
        import os, signal, threading
        import numpy as np
        import rill
        # Python's Ctrl-C handler, whatever this process inherited: a job started in the background of a
        # non-interactive shell (as CI may be) has SIGINT ignored, and Python then never raises
        # KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rill.set_num_threads(1)
        rill.set_env_override("RILL_VM_WAITER_RUNS_QUEUED", "0")
        a = rill.randn(1024, 1024)
        x = a
        for _ in range(60):   # seconds of queued matmuls
            x = (x @ a) * 0.001
        # Ctrl-C pressed every 0.3 s until it is taken (the first may land before the wait begins).
        taken = threading.Event()
        def press():
            while not taken.wait(0.3):
                os.kill(os.getpid(), signal.SIGINT)
        presser = threading.Thread(target=press)
        presser.start()
        try:
            x.sum().item()
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a press after this one changes nothing
            print("interrupted", flush=True)
        taken.set()
        presser.join()
        rill.synchronize()
        assert (rill.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]
        assert np.isfinite(x.sum().item())
        print("usable", flush=True)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "interrupted" in p.stdout and "usable" in p.stdout, p.stdout + p.stderr


def test_exit_with_queued_work_does_not_hang():
    code = textwrap.dedent("""
        import rill
        a = rill.randn(512, 512)
        x = a
        for _ in range(50):
            x = x @ a * 0.01
        y = [rill.ones(100) + i for i in range(2000)]
        print("queued", flush=True)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "queued" in p.stdout


def test_many_client_threads_see_their_own_program_order():
    results, errors = {}, []

    def client(k):
        try:
            x = rill.full((64,), float(k))
            shared_read = base * 1.0
            for i in range(300):
                x = x + 1
                if i % 50 == 0:
                    x.mul_(1.0)
            results[k] = (x.sum().item(), shared_read.sum().item())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    base = rill.arange(64, dtype=rill.float32)
    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(6):
        assert results[k] == (64.0 * (k + 300), float(sum(range(64))))


def test_million_op_loop_keeps_memory_flat():
    import gc
    gc.collect()
    rill.synchronize()
    base = rill.memory_stats()["allocated_bytes"]
    x = rill.zeros(16)
    y = rill.ones(16)
    peak = 0
    for i in range(1_000_000):
        x = x + y
        if i % 100_000 == 0:
            peak = max(peak, rill.memory_stats()["allocated_bytes"])
    assert x[0].item() == 1_000_000.0
    del x, y
    gc.collect()
    rill.synchronize()
    assert rill.memory_stats()["allocated_bytes"] == base
    assert peak - base < 64 << 20   # bounded by back-pressure, not by the loop length


def test_back_pressure_bounds_instructions_in_flight(knob):
    knob("RILL_VM_MAX_IN_FLIGHT", 64)
    a = rill.randn(256, 256)
    x = a
    most = 0
    for _ in range(400):
        x = x + a
        most = max(most, rill._C._num_in_flight())
    rill.synchronize()
    assert most <= 64 + 1


def test_dropped_tensor_memory_returns_after_its_readers_finish():
    import gc
    gc.collect()
    rill.synchronize()
    base = rill.memory_stats()["allocated_bytes"]
    big = rill.randn(1024, 1024)
    out = big @ big       # queued reader of big
    del big               # Python drops it while the matmul may still be queued
    assert out.shape == (1024, 1024)
    assert np.isfinite(out.sum().item())
    del out
    gc.collect()
    rill.synchronize()
    assert rill.memory_stats()["allocated_bytes"] == base


def test_vm_threads_are_named():
    if not os.path.isdir(f"/proc/{os.getpid()}/task"):
        pytest.skip("needs /proc")
    (rill.ones(2) + 1).sum().item()
    names = set()
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{tid}/comm") as f:
            names.add(f.read().strip())
    assert "rill-scheduler" in names
