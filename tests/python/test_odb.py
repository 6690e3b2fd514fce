"""odb (docs/architecture.md §7, docs/odb.md): rill.odb stops and restarts VM threads; under gdb with
tools/odb/odb.py, the anchor breakpoints stop in the right thread kind and show the anchor's
caller, odb-vm lists what queues behind a stopped scheduler, odb-tensor reads a tensor, and a
fork never stops inside its handler."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest

import rill

REPO = pathlib.Path(__file__).resolve().parents[2]
ODB = REPO / "tools" / "odb" / "odb.py"
STEPPING = {"RILL_VM_COMPUTE_ON_WORKER_THREAD": "0", "RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS": "0",
            "RILL_VM_WAITER_RUNS_QUEUED": "0"}


def run_script(code, env=None, timeout=60):
    """Run code in a fresh interpreter (which finds rill as this one did); returns the CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


# --- rill.odb without a debugger ---------------------------------------------------------------------------------

@pytest.fixture
def restart_all():
    yield
    rill.odb.restart_vm_scheduler()
    for tid in rill.odb.stopped()["workers"]:
        rill.odb.restart_vm_worker(tid)
    rill.synchronize()


def test_stopped_scheduler_queues_ops_until_restart(restart_all):
    x = rill.ones(16)
    rill.synchronize()
    rill.odb.stop_vm_scheduler()
    assert rill.odb.stopped() == {"scheduler": True, "workers": []}
    y = x
    for _ in range(10):
        y = y + x
    assert rill._C._num_in_flight() >= 10, "ops ran although the scheduler is stopped"
    rill.odb.restart_vm_scheduler()
    assert rill.odb.stopped()["scheduler"] is False
    assert y[3].item() == 11.0
    rill.synchronize()
    assert rill._C._num_in_flight() == 0


def test_sync_point_behind_a_stopped_scheduler_raises(restart_all):
    x = rill.ones(4)
    rill.synchronize()
    rill.odb.stop_vm_scheduler()
    y = x * 3
    with pytest.raises(RuntimeError, match=r"restart_vm_scheduler\(\)"):
        y.sum().item()
    with pytest.raises(RuntimeError, match="scheduler is stopped"):
        rill.synchronize()
    rill.odb.restart_vm_scheduler()
    assert y.sum().item() == 12.0


def test_back_pressure_behind_a_stopped_scheduler_raises(restart_all):
    rill.set_env_override("RILL_VM_MAX_IN_FLIGHT", "16")
    try:
        x = rill.ones(4)
        rill.synchronize()
        rill.odb.stop_vm_scheduler()
        with pytest.raises(RuntimeError, match="scheduler is stopped"):
            for _ in range(40):
                x = x + 1
        rill.odb.restart_vm_scheduler()
        rill.synchronize()
        assert 16 <= x[0].item() <= 41
    finally:
        rill.set_env_override("RILL_VM_MAX_IN_FLIGHT", None)


def test_stopped_worker_queues_its_thread_only(restart_all):
    t = rill.asyncs.Thread()
    try:
        x = rill.ones(8)
        rill.synchronize()
        rill.odb.stop_vm_worker(t.id)
        assert rill.odb.stopped()["workers"] == [t.id]
        with rill.asyncs.thread(t):
            y = x * 5
        z = x + 1  # thread 0 still runs
        assert z.sum().item() == 16.0
        assert rill._C._num_in_flight() >= 1, "the stopped worker ran its instruction"
        rill.odb.restart_vm_worker(t.id)
        assert y.sum().item() == 40.0
    finally:
        t.close()


def test_sync_point_behind_a_stopped_worker_warns_and_waits(restart_all):
    t = rill.asyncs.Thread()
    try:
        x = rill.ones(4)
        rill.synchronize()
        rill.odb.stop_vm_worker(t.id)
        with rill.asyncs.thread(t):
            y = x * 2
        restarter = threading.Timer(1.5, rill.odb.restart_vm_worker, args=(t.id,))
        restarter.start()
        with pytest.warns(RuntimeWarning, match=rf"restart_vm_worker\({t.id}\)"):
            assert y.sum().item() == 8.0  # waits until the other thread restarts the worker
        restarter.join()
    finally:
        t.close()


def test_stop_worker_checks_its_argument():
    with pytest.raises(ValueError, match="out of range"):
        rill.odb.stop_vm_worker(1000)
    rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", "0")
    try:
        with pytest.raises(ValueError, match="stop_vm_scheduler"):
            rill.odb.stop_vm_worker(0)
    finally:
        rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", None)


def test_fork_and_exit_while_the_scheduler_is_stopped():
    # The fork's drain must not wait forever (it restarts the scheduler, then stops it again in the parent),
    # the child's fresh VM runs, and exit finishes the queued work.
    r = run_script("""
        import os, rill
        x = rill.ones(3)
        rill.synchronize()
        rill.odb.stop_vm_scheduler()
        y = x + 1
        pid = os.fork()
        if pid == 0:
            os._exit(0 if (y + 1).sum().item() == 9.0 and not rill.odb.stopped()["scheduler"] else 1)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), "parent stopped", rill.odb.stopped()["scheduler"])
        z = y * 2   # queued behind the stopped scheduler; exit runs it
    """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "child 0 parent stopped True" in r.stdout


# --- under gdb ---------------------------------------------------------------------------------------------------

def _gdb_unusable():
    """Why gdb can't be used here, or None."""
    if shutil.which("gdb") is None:
        return "gdb is not installed (scripts/setup.sh installs it)"
    try:
        r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "--args", sys.executable, "-c", "pass"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "gdb did not run a trivial program within 60 s"
    out = r.stdout + r.stderr
    if "exited normally" not in out:
        return "gdb can't run programs here (is ptrace permitted? see /proc/sys/kernel/yama/ptrace_scope): " + \
            out.strip().splitlines()[-1] if out.strip() else "no output"
    return None


@pytest.fixture(scope="module")
def gdb_ok():
    reason = _gdb_unusable()
    if reason:
        pytest.skip(reason)


def run_gdb(script, commands, tmp_path, env=None, timeout=180):
    """Run script under gdb in batch mode with odb loaded and the stepping knobs; returns gdb's output."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    args = ["gdb", "-batch", "-nx", "-ex", "set pagination off", "-ex", f"source {ODB}"]
    for c in commands:
        args += ["-ex", c]
    args += ["--args", sys.executable, str(path)]
    full_env = {**os.environ, **STEPPING, **(env or {})}
    r = subprocess.run(args, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def debug_info(gdb_ok, tmp_path_factory):
    """Skip unless this build carries debug info for rill's types (RILL_ODB_DEBUG_INFO=ON, the default)."""
    out = run_gdb("import rill\nrill.odb.breakpoint()\n", ["run", "ptype rill::vm::Instruction"],
                  tmp_path_factory.mktemp("odb"))
    if "trace_id" not in out:
        pytest.skip("this rill build has no debug info for its types (build with -DRILL_ODB_DEBUG_INFO=ON)")


ITEM_SCRIPT = """
    import rill
    x = rill.ones(3)
    y = x + 1
    print("value", y.sum().item())
"""


def _first_stop(out):
    """The odb line of the first stop and the frame line after it (the anchor's caller: frame 1, or 2 past the
    inlined observer hook)."""
    lines = out.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("odb: ") and " thread, gdb thread " in line:
            frame = next((x for x in lines[k + 1:] if x.startswith(("#1 ", "#2 "))), "")
            return line, frame
    raise AssertionError("gdb never stopped on an odb anchor:\n" + out)


@pytest.mark.parametrize("command, env, kind, thread, caller", [
    ("odb-b-client", {}, "client", "gdb thread 1 ", "rill::vm::submit"),
    ("odb-b-scheduler", {}, "scheduler", '"rill-scheduler"', "rill::vm::Scheduler::admit"),
    ("odb-b-worker", {"RILL_VM_COMPUTE_ON_WORKER_THREAD": "1"}, "worker", '"rill-worker-0"',
     "rill::vm::Worker::run_batch"),
    ("odb-b-all", {}, "client", "gdb thread 1 ", "rill::vm::submit"),
])
def test_breakpoint_commands_stop_in_their_thread_kind(gdb_ok, tmp_path, command, env, kind, thread, caller):
    out = run_gdb(ITEM_SCRIPT, [command, "run", "frame"], tmp_path, env)
    stop, frame = _first_stop(out)
    assert stop.startswith(f"odb: {kind} thread, "), stop
    assert thread in stop, stop
    assert caller in frame, f"expected the anchor's caller {caller}, got {frame!r}\n{out}"
    # The selected frame stays the caller's, not the anchor's.
    after = out[out.index(frame) + len(frame):]
    shown = re.search(r"^#[12] .*$", after, re.MULTILINE)  # what `frame` prints: the selected frame
    assert shown and "rill_odb_anchor" not in shown.group(0) and "trace::observe" not in shown.group(0), out


def test_breakpoint_all_stops_in_every_thread_kind(gdb_ok, tmp_path):
    out = run_gdb(ITEM_SCRIPT, ["odb-b-all", "run"] + ["continue"] * 12, tmp_path)
    stops = [line for line in out.splitlines() if line.startswith("odb: ") and " thread, gdb thread " in line]
    assert any(s.startswith("odb: client thread") and ", submit" in s for s in stops), out
    assert any(s.startswith("odb: scheduler thread") and ", schedule" in s for s in stops), out
    assert any(s.startswith("odb: scheduler thread") and ", run" in s for s in stops), out
    assert any(s.startswith("odb: scheduler thread") and ", release" in s for s in stops), out


def test_odb_vm_and_odb_tensor_while_the_scheduler_is_stopped(debug_info, tmp_path):
    script = """
        import rill
        x = rill.ones(2, 3)
        rill.synchronize()
        rill.odb.stop_vm_scheduler()
        y = x + 1
        rill.odb.breakpoint(y)
        rill.odb.restart_vm_scheduler()
        print("value", y.sum().item())
    """
    out = run_gdb(script, ["run", "odb-vm", "odb-tensor $odb_tensor", "print *$odb_tensor", "continue"], tmp_path)
    assert "odb: stopped by rill.odb.breakpoint()" in out, out
    vm = out[out.index("rill VM "):]
    assert "scheduler, gdb thread" in vm and "stopped by rill.odb (parked)" in vm, vm
    queued = vm[vm.index("queued: submitted, not yet scheduled: "):]
    assert int(queued.split(": ")[2].split()[0]) >= 1, vm
    assert "add_scalar(float32[2, 3]) -> float32[2, 3]" in queued.splitlines()[1], vm
    tensor = out[out.index("tensor (rill::TensorImpl*)"):]
    assert "dtype float32, shape [2, 3], strides [3, 1]" in tensor, tensor
    assert "not allocated yet" in tensor and "writes in flight: 1" in tensor, tensor
    assert "queued write (not yet scheduled): add_scalar(float32[2, 3])" in tensor, tensor
    assert "rill::TensorImpl float32[2, 3]" in out, "the TensorImpl pretty printer did not run:\n" + out
    assert "value 12.0" in out, out


def test_odb_vm_lists_the_queue_of_a_stopped_worker(debug_info, tmp_path):
    script = """
        import rill, time
        t = rill.asyncs.Thread()
        x = rill.ones(4)
        rill.synchronize()
        rill.odb.stop_vm_worker(t.id)
        with rill.asyncs.thread(t):
            for _ in range(150):   # more than one 64-pointer node of the worker's std::deque
                x = x * 1.0
        time.sleep(0.2)            # the scheduler dispatches them to the parked worker (odb-vm counts them anyway)
        rill.odb.breakpoint(x)
        rill.odb.restart_vm_worker(t.id)
        print("value", x.sum().item())
    """
    out = run_gdb(script, ["run", "odb-vm 1000", "continue"], tmp_path)
    vm = out[out.index("rill VM "):]
    assert "worker 1, gdb thread" in vm and "stopped by rill.odb (parked)" in vm, vm
    assert "ready: dispatched, not started: " in vm, vm
    assert sum("mul_scalar(float32[4]) -> float32[4]  [thread id 1]" in line for line in vm.splitlines()) == 150, vm
    assert "value 4.0" in out, out


def test_pretty_printers(debug_info, tmp_path):
    script = """
        import rill
        x = rill.ones(4, 5, dtype=rill.float64)[:, 1]
        rill.synchronize()
        rill.odb.breakpoint(x)
    """
    out = run_gdb(script, ["run", "print $odb_tensor->meta_", "print $odb_tensor->meta_.ptr_->shape",
                           "print $odb_tensor->meta_.ptr_->strides", "print $odb_tensor->meta_.ptr_->dtype",
                           "print *$odb_tensor"], tmp_path)
    assert "= Symbol(float64[4] strides [5] cpu (non-contiguous))" in out, out
    assert "= [4]\n" in out and "= [5]\n" in out and "= float64\n" in out, out
    assert "= rill::TensorImpl float64[4] offset 1 storage 0x" in out, out


def test_fork_never_stops_inside_its_handler(gdb_ok, tmp_path):
    # The scheduler is stopped, so work is in flight at the fork: the prepare handler drains the VM (restarting
    # the scheduler), and the scheduler's anchors fire while it does. None may fire on the forking thread.
    script = """
        import os, rill
        x = rill.ones(3)
        rill.synchronize()
        rill.odb.stop_vm_scheduler()
        y = x + 1
        pid = os.fork()
        if pid == 0:
            os._exit(0 if (y + 1).sum().item() == 9.0 else 1)
        _, status = os.waitpid(pid, 0)
        rill.odb.restart_vm_scheduler()
        print("child", os.waitstatus_to_exitcode(status), "value", y.sum().item())
    """
    checker = tmp_path / "check.py"
    checker.write_text(textwrap.dedent("""
        import gdb
        stops, in_fork, during_fork = 0, [], 0
        def check(event):
            global stops, during_fork
            if not isinstance(event, gdb.BreakpointEvent):
                return
            stops += 1
            names, f = [], gdb.newest_frame()
            while f is not None:
                names.append(f.name() or "?")
                f = f.older()
            if any("fork" in n for n in names):
                in_fork.append(gdb.selected_thread().name)
            main = gdb.selected_inferior().threads()[-1]
            frames = gdb.execute("thread apply " + str(main.num) + " bt", to_string=True)
            if "fork" in frames:
                during_fork += 1
        gdb.events.stop.connect(check)
        gdb.execute("run")
        while gdb.selected_inferior().pid:
            gdb.execute("continue")
        print(f"odb-test: {stops} stops, {len(in_fork)} inside a fork handler {in_fork}, {during_fork} during fork")
    """))
    out = run_gdb(script, ["odb-b-all", f"source {checker}"], tmp_path)
    summary = [line for line in out.splitlines() if line.startswith("odb-test:")]
    assert summary, out
    words = summary[0].split()
    assert int(words[1]) > 0 and words[3] == "0", summary[0]
    assert int(words[-3]) > 0, "no anchor fired while the main thread was in fork(): the test lost its point\n" + out
    assert "child 0 value 6.0" in out, out
