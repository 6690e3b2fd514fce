"""Matmul survives a fork() from another thread (docs/architecture.md §3.8).

Debian's threaded OpenBLAS was seen to deadlock when a thread forked while
another was inside a matmul. rill drives a serial OpenBLAS from its own intra-op
pool, which a forked child rebuilds (Note [Pool and fork], Note [BLAS threads]).
The child here runs with the VM in synchronous mode: forking a process whose VM
threads are running is the subject of a later issue (fork safety of the VM).
"""
import os
import subprocess
import sys
import textwrap

CHILD_MATMUL_AFTER_FORK = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import rill
    rill.set_num_threads(2)
    a = rill.randn(384, 384)
    expected = a.numpy(force=True).astype(np.float64) @ a.numpy(force=True).astype(np.float64)  # in the parent
    stop = False

    def hammer():                       # matmuls in flight on the main thread's behalf
        while not stop:
            (a @ a).sum().item()

    t = threading.Thread(target=hammer)
    t.start()
    children = []
    for _ in range(10):
        time.sleep(0.02)
        pid = os.fork()                 # from the main thread while `hammer` is inside matmuls
        if pid == 0:
            ok = np.allclose((a @ a).numpy(force=True), expected, rtol=1e-4, atol=1e-3)
            os._exit(0 if ok else 1)
        children.append(pid)
    stop = True
    t.join()
    codes = [os.waitpid(p, 0)[1] for p in children]
    print("CHILDREN", codes)
    sys.exit(0 if all(c == 0 for c in codes) else 1)
""")


def test_matmul_in_a_child_forked_during_matmuls():
    flags = ["-S"] if sys.flags.no_site else []
    p = subprocess.run([sys.executable, *flags, "-c", CHILD_MATMUL_AFTER_FORK], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, RILL_VM_MULTI_THREAD="0"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CHILDREN [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]" in p.stdout
