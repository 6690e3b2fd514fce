"""rill.distributed over several processes on this host: each test launches a job with
`python -m rill.distributed.run` (mpirun) and checks its exit status and output. The checks themselves run
inside the ranks (tests/python/distributed_worker.py)."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from rill.distributed.run import mpirun_command

pytestmark = pytest.mark.distributed

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
CASES = ["collectives", "p2p", "groups", "async", "errors", "ddp", "ddp_overlap", "ddp_no_sync", "ddp_unused", "fork"]


def launch(nproc, script, *args, timeout=240, env=None):
    cmd = [sys.executable, "-m", "rill.distributed.run", "--nproc", str(nproc), script, *args]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return p, time.monotonic() - start


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_every_case_on_every_rank(nproc):
    p, _ = launch(nproc, WORKER, *CASES)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    for case in CASES:
        for rank in range(nproc):
            assert f"PASS {case} rank {rank}" in p.stdout, (case, rank, out[-4000:])


@pytest.mark.parametrize("how", ["raise", "os_exit", "kill"])
def test_a_failing_rank_ends_the_job(tmp_path, how):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, time
        import rill, rill.distributed as dist
        dist.init_process_group()
        if dist.get_rank() == 1:
            time.sleep(0.3)
            if "{how}" == "raise":
                raise ValueError("rank one fails")
            if "{how}" == "os_exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        t = rill.ones(2)
        dist.all_reduce(t)   # rank 0 waits here for a rank that is gone
        print(t.tolist())
    """))
    p, took = launch(2, str(script), timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert took < 15, took
    if how == "raise":
        assert "rank one fails" in out and "rank 1 of 2 raised ValueError" in out, out
    elif how == "os_exit":
        assert "non-zero status" in out, out
    else:
        assert "rank 1" in out and "signal 9" in out, out


def test_singleton_without_a_launcher(tmp_path):
    """`python script.py` alone is a world of one."""
    script = tmp_path / "one.py"
    script.write_text(textwrap.dedent("""
        import rill, rill.distributed as dist
        dist.init_process_group("gloo")
        t = rill.full((3,), 2.0)
        dist.all_reduce(t)
        print(dist.get_rank(), dist.get_world_size(), t.tolist())
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[0] == "0 1 [2.0, 2.0, 2.0]"


def test_more_processes_than_the_launcher_started_is_an_error(tmp_path):
    script = tmp_path / "two.py"
    script.write_text("import rill.distributed as dist\ndist.init_process_group()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    env["WORLD_SIZE"] = "2"
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode != 0
    assert "rill.distributed.run" in p.stderr, p.stderr


def test_calls_before_init_raise():
    import rill
    import rill.distributed as dist
    if dist.is_initialized():
        pytest.skip("this process runs a process group")
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(rill.ones(1))
    with pytest.raises(RuntimeError, match="init_process_group"):
        rill.nn.parallel.DistributedDataParallel(rill.nn.Linear(2, 2))


def test_the_launcher_sets_what_root_and_containers_need(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    cmd, env = mpirun_command(cores + 1, "train.py", ["--epochs", "2"])
    assert "--oversubscribe" in cmd
    assert cmd[-3:] == ["train.py", "--epochs", "2"] and cmd[-4] == sys.executable
    assert env["OMPI_MCA_btl_vader_single_copy_mechanism"] == "none"
    if os.geteuid() == 0:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    cmd, _ = mpirun_command(1, "pkg.mod", [], module=True)
    assert "--oversubscribe" not in cmd and cmd[-2:] == ["-m", "pkg.mod"]
    cmd, _ = mpirun_command(4, "x.py", [], hosts="a:2,b:2")
    assert cmd[cmd.index("-H") + 1] == "a:2,b:2" and "--oversubscribe" not in cmd


def test_the_ddp_example_trains_and_matches_one_process(tmp_path):
    example = os.path.join(HERE, "..", "..", "examples", "train_digits_ddp.py")
    p, _ = launch(2, example, "--check", "--out", str(tmp_path))
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    assert "(bar 1e-5) -> PASS" in p.stdout and "replicas identical" in p.stdout, p.stdout
