"""The VM trace (docs/architecture.md §7): rill.vm_trace(path) and RILL_VM_TRACE=path record every
instruction's submit, dispatch, start and end in Chrome trace-event JSON, and
tools/vm_trace_summary.py summarises it."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import rill

REPO = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = REPO / "tools" / "vm_trace_summary.py"

sys.path.insert(0, str(SUMMARY.parent))
import vm_trace_summary  # noqa: E402


def instructions(path):
    """{id: {"name", "submit", "dispatch", "start", "end", "run_tid", "submit_tid"}} from a trace file."""
    data = json.loads(pathlib.Path(path).read_text())
    out = {}
    for e in data["traceEvents"]:
        cat = e.get("cat")
        if cat not in ("submit", "dispatch", "run"):
            continue
        rec = out.setdefault(e["args"]["id"], {"name": e["name"]})
        assert rec["name"] == e["name"]
        assert cat not in rec and (cat != "run" or "start" not in rec), f"two {cat} events for {e['args']['id']}"
        if cat == "run":
            rec["start"], rec["end"], rec["run_tid"] = e["ts"], e["ts"] + e["dur"], e["tid"]
        else:
            rec[cat] = e["ts"]
            if cat == "submit":
                rec["submit_tid"] = e["tid"]
    return out


def check_ordered(recs):
    for id_, r in recs.items():
        missing = {"submit", "dispatch", "start", "end"} - r.keys()
        assert not missing, f"instruction {id_} ({r['name']}) has no {missing} event"
        assert r["submit"] <= r["dispatch"] <= r["start"] <= r["end"], f"instruction {id_} out of order: {r}"


def thread_names(path):
    data = json.loads(pathlib.Path(path).read_text())
    return {e["tid"]: e["args"]["name"] for e in data["traceEvents"] if e.get("name") == "thread_name"}


@pytest.mark.parametrize("on_worker", [0, 1])
def test_every_instruction_has_ordered_events_and_the_summary_counts_them(tmp_path, on_worker):
    rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", str(on_worker))
    rill.set_env_override("RILL_VM_WAITER_RUNS_QUEUED", "0")  # checks which VM thread ran what
    try:
        a, b = rill.ones(16, 16), rill.full((16, 16), 0.5)
        rill.synchronize()
        path = tmp_path / "trace.json"
        before = rill._C._num_instructions()
        with rill.vm_trace(path):
            x = a
            for _ in range(10):
                x = x + b
            for _ in range(5):
                x = x * 0.5
            y = x @ a
            value = y.sum().item()
        submitted = rill._C._num_instructions() - before
    finally:
        rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", None)
        rill.set_env_override("RILL_VM_WAITER_RUNS_QUEUED", None)
    assert value == pytest.approx(((1 + 5) * 0.5 ** 5) * 16 * 256)
    recs = instructions(path)
    check_ordered(recs)
    assert len(recs) == submitted, "the trace lost or invented instructions"
    names = [r["name"] for r in recs.values()]
    assert names.count("add") == 10 and names.count("mul_scalar") == 5 and names.count("matmul") == 1, names
    threads = thread_names(path)
    runs_on = {threads[r["run_tid"]] for r in recs.values() if r["name"] == "add"}
    assert runs_on == ({"rill-worker-0"} if on_worker else {"rill-scheduler"}), runs_on
    assert all(threads[r["submit_tid"]].startswith("client ") for r in recs.values())

    summary = vm_trace_summary.summarise(*vm_trace_summary.load(path))
    assert summary["instructions"] == submitted
    assert {k: v["count"] for k, v in summary["ops"].items()} == \
        {n: names.count(n) for n in set(names)}
    assert summary["ops"]["add"]["mean_run_us"] > 0 and summary["ops"]["add"]["mean_queue_wait_us"] >= 0
    runner = "rill-worker-0" if on_worker else "rill-scheduler"
    busy = [t for name, t in summary["threads"].items() if name.startswith(runner)]
    assert busy and 0 < busy[0]["utilisation"] <= 1.0, summary["threads"]


@pytest.mark.parametrize("on_worker", [0, 1])
def test_async_thread_instructions_run_on_their_worker(tmp_path, on_worker):
    rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", str(on_worker))
    rill.set_env_override("RILL_VM_WAITER_RUNS_QUEUED", "0")  # checks which VM thread ran what
    t = rill.asyncs.Thread()
    tid = t.id
    try:
        a = rill.ones(8)
        rill.synchronize()
        with rill.vm_trace(tmp_path / "t.json"):
            with rill.asyncs.thread(t):
                b = a * 2
            c = b + 1
            c.sum().item()
    finally:
        t.close()
        rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", None)
        rill.set_env_override("RILL_VM_WAITER_RUNS_QUEUED", None)
    recs = instructions(tmp_path / "t.json")
    check_ordered(recs)
    threads = thread_names(tmp_path / "t.json")
    by_name = {r["name"]: threads[r["run_tid"]] for r in recs.values()}
    thread0 = "rill-worker-0" if on_worker else "rill-scheduler"
    assert by_name["mul_scalar"] == f"rill-worker-{tid}" and by_name["add_scalar"] == thread0, by_name
    # The read follows thread 0's sum only: whatever runs thread 0 completes it (Note [Markers on a worker]).
    # A sum already finished when item() starts is read on the client with no marker at all, and one that
    # retired between item()'s submit and the scheduler's admission of the marker leaves it nothing to follow:
    # the scheduler completes it then, dispatched only after the sum ended.
    assert by_name["sum"] == thread0, by_name
    read = next((r for r in recs.values() if r["name"] == "sync_read"), None)
    if read is not None and threads[read["run_tid"]] != thread0:
        total = next(r for r in recs.values() if r["name"] == "sum")
        assert threads[read["run_tid"]] == "rill-scheduler" and total["end"] <= read["dispatch"], (by_name, recs)


def test_summary_script_prints_a_table(tmp_path):
    a = rill.ones(4)
    with rill.vm_trace(tmp_path / "t.json"):
        (a + 1).sum().item()
    r = subprocess.run([sys.executable, str(SUMMARY), str(tmp_path / "t.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "add_scalar" in r.stdout and "mean queue wait us" in r.stdout and "thread utilisation" in r.stdout
    r = subprocess.run([sys.executable, str(SUMMARY), "--json", str(tmp_path / "t.json")], capture_output=True,
                       text=True)
    assert json.loads(r.stdout)["ops"]["add_scalar"]["count"] == 1


def test_traces_do_not_nest_and_a_bad_path_raises(tmp_path):
    with rill.vm_trace(tmp_path / "a.json"):
        with pytest.raises(RuntimeError, match="already recording"):
            with rill.vm_trace(tmp_path / "b.json"):
                pass
    with pytest.raises(RuntimeError, match="can't write"):
        with rill.vm_trace(tmp_path / "no" / "such" / "dir.json"):
            pass
    assert not rill._C._vm_trace_active()


def test_env_knob_traces_the_whole_run_and_a_fork_child_does_not_overwrite_it(tmp_path):
    path = tmp_path / "env.json"
    code = textwrap.dedent("""
        import os, rill
        x = rill.ones(8)
        for _ in range(7):
            x = x + 1
        pid = os.fork()
        if pid == 0:
            (x * 2).sum().item()
            os._exit(0)
        os.waitpid(pid, 0)
        print(x.sum().item())
    """)
    env = dict(os.environ, RILL_VM_TRACE=str(path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "64.0"
    recs = instructions(path)
    check_ordered(recs)
    names = [x["name"] for x in recs.values()]
    assert names.count("add_scalar") == 7, names
    assert "mul_scalar" not in names, "the fork child wrote its own trace over the parent's"
