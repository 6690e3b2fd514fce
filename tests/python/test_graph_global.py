"""Global tensors and nn.Graph over several processes (docs/global.md): each test launches a job with
`python -m rill.distributed.run` and the checks run inside the ranks (tests/python/global_worker.py)."""
import os
import subprocess
import sys

import pytest

import rill

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "global_worker.py")
CASES = ["tensors", "data_parallel", "data_parallel_norm_embedding", "tensor_parallel", "pipeline",
         "ssp_pipeline", "to_global_in_build", "compile_modes"]


def launch(nproc, *args, timeout=240):
    cmd = [sys.executable, "-m", "rill.distributed.run", "--nproc", str(nproc), WORKER, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def check_cases(nproc, cases):
    """Run global_worker.py's cases on nproc ranks: each must print PASS on every rank."""
    p = launch(nproc, *cases)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    for case in cases:
        for rank in range(nproc):
            assert f"PASS {case} rank {rank}" in p.stdout, (case, rank, out[-4000:])


@pytest.mark.distributed
@pytest.mark.parametrize("nproc", [2, 3])
def test_global_graphs_on_every_rank(nproc):
    check_cases(nproc, CASES)


@pytest.mark.distributed
def test_compile_modes_on_four_ranks():
    """At 4 ranks too (2 and 3 run above): naive and separate give the same plans and losses."""
    check_cases(4, ["compile_modes"])


@pytest.mark.distributed
def test_meshes_on_four_ranks():
    """A 2 x 2 mesh: SBPs per mesh dim, boxing dim by dim, data x tensor parallel training equal to one process."""
    check_cases(4, ["mesh"])


@pytest.mark.distributed
def test_compile_bench(tmp_path):
    """python -m rill.graph.compile_bench: rows for real and simulated worlds, the ratios, and the plot."""
    import json
    plot = tmp_path / "compile.png"
    cmd = [sys.executable, "-m", "rill.graph.compile_bench", "--ranks", "1", "2", "--simulate", "4",
           "--workloads", "data_parallel", "hybrid", "--repeats", "1", "--json", "--plot", str(plot)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    keys = {"workload", "mode", "ranks", "simulated", "per_rank_cpu_s", "master_cpu_s", "master_bytes_sent",
            "plan_bytes"}
    assert rows and all(set(r) == keys for r in rows)
    got = {(r["workload"], r["mode"], r["ranks"], r["simulated"]) for r in rows}
    for w in ("data_parallel", "hybrid"):
        for m in ("naive", "separate"):
            assert {(w, m, 1, False), (w, m, 2, False), (w, m, 1, True), (w, m, 4, True)} <= got
    for r in rows:
        assert r["per_rank_cpu_s"] > 0 and r["master_cpu_s"] > 0 and r["plan_bytes"] > 0
        assert (r["master_bytes_sent"] > 0) == (r["ranks"] > 1), r
    # the naive master sends every rank its plan, the separate one the job: both grow with the ranks
    sent = {(r["workload"], r["mode"], r["ranks"]): r["master_bytes_sent"] for r in rows if r["simulated"]}
    assert sent[("hybrid", "naive", 4)] > 0 and sent[("hybrid", "separate", 4)] > 0
    assert plot.exists() and plot.stat().st_size > 10000


def test_sbp_objects():
    assert rill.sbp.split(1) == rill.sbp.split(1) != rill.sbp.split(0)
    assert rill.sbp.broadcast != rill.sbp.partial_sum
    assert repr(rill.sbp.split(0)) == "rill.sbp.split(dim=0)"
    assert len({rill.sbp.split(0), rill.sbp.split(0), rill.sbp.broadcast}) == 2
    with pytest.raises(ValueError, match="dim must be an int"):
        rill.sbp.split(-1)


def test_placement_objects():
    p = rill.placement("cpu", ranks=[0, 1])
    assert p == rill.placement(type="cpu", ranks=[0, 1]) != rill.placement("cpu", ranks=[0])
    assert p.ranks == [0, 1] and p.hierarchy == [2]
    assert repr(p) == 'rill.placement(type="cpu", ranks=[0, 1])'
    with pytest.raises(ValueError, match="'cpu' ranks only"):
        rill.placement("cuda", ranks=[0])
    with pytest.raises(ValueError, match="increasing order"):
        rill.placement("cpu", ranks=[1, 0])
    mesh = rill.placement("cpu", ranks=[[0, 1, 2], [3, 4, 5]])  # Note [Meshes] in src/rill/core/sbp.h
    assert mesh.ranks == [[0, 1, 2], [3, 4, 5]] and mesh.hierarchy == [2, 3] and mesh != rill.placement(
        "cpu", ranks=list(range(6)))
    assert repr(mesh) == 'rill.placement(type="cpu", ranks=[[0, 1, 2], [3, 4, 5]])'
    from rill._global import _lines
    assert _lines(mesh._ranks, mesh._mesh, 0) == [(0, 3), (1, 4), (2, 5)]
    assert _lines(mesh._ranks, mesh._mesh, 1) == [(0, 1, 2), (3, 4, 5)]
    with pytest.raises(ValueError, match="rectangular"):
        rill.placement("cpu", ranks=[[0, 1], [2]])
    with pytest.raises(ValueError, match="increasing order"):
        rill.placement("cpu", ranks=[[0, 2], [1, 3]])


def test_a_local_tensor_has_no_placement():
    t = rill.ones(2)
    assert t.is_local and not t.is_global and t.to_local() is t
    with pytest.raises(RuntimeError, match="make a global one with to_global"):
        t.placement


def test_to_global_needs_the_process_group():
    import rill.distributed as dist
    if dist.is_initialized():
        pytest.skip("a process group is running")
    with pytest.raises(RuntimeError, match="init_process_group"):
        rill.ones(2).to_global(rill.placement("cpu", ranks=[0]), rill.sbp.broadcast)


def test_sleep_is_a_copy_whose_gradient_passes_through():
    x = rill.arange(6.0).reshape(3, 2).requires_grad_(True)
    y = rill.experimental.sleep(x.t(), 0.001)  # a strided input: the copy is dense
    assert y.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]] and y.is_contiguous()
    (y * rill.tensor([[1.0], [2.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]
    with pytest.raises(ValueError, match=r"seconds must be in \[0, 60\]"):
        rill.experimental.sleep(x, -1)
