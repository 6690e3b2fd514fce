"""Compile time over the ranks, naive against separate compilation (Note [Separate compilation] in
src/rill/graph/separate.cpp):

    python -m rill.graph.compile_bench --ranks 1 2 4 8 --simulate 16 64 256 [--json] [--plot compile_bench.png]

For a data-parallel step, a two-stage pipeline and a tensor-parallel (hybrid) step that needs boxing, each mode
compiles the step's job for every rank:
- ``--ranks``: real worlds of N processes (python -m rill.distributed.run), each compiling as nn.Graph does;
- ``--simulate``: one process compiles for a world of N ranks it does not start (rill.graph.simulated_world): the
  master's work as in that mode, and the parts of the first, middle and last ranks.
Each row: per_rank_cpu_s (the most CPU seconds a rank other than the master spent compiling its part; with one
rank, that rank's whole compile), master_cpu_s (rank 0's: its part and, by the mode, the logical job or every
rank's part), master_bytes_sent (what rank 0 sent the others), plan_bytes (rank 0's plan): the least of
--repeats compiles after one that warms the caches up (noise on a shared machine only adds CPU time).
The ranks of a real world compile one at a time (compile_job's one_at_a_time): with more ranks than cores, ranks
compiling at once would slow each other's CPU time down. Each simulated world runs in a fresh process, which also
compiles for one rank, alternating with it compile by compile: the simulated ratios are against the one-rank
world of the largest world's process. It prints a table (or, with --json, one JSON object per row), the ratios
the separate mode should keep flat, and writes a log-log plot of the three figures against the ranks.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import rill
from rill import nn
from rill.nn.graph import GraphModule

MODES = ("naive", "separate")
WORKLOADS = ("data_parallel", "pipeline", "hybrid")


class _Step(nn.Graph):
    def __init__(self, model, stages=(), accumulation=1):
        super().__init__()
        self.model = model
        for module, stage, placement in stages:
            module.to(GraphModule).set_stage(stage, placement)
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(rill.optim.Adam(model.parameters(), lr=1e-3))
        self.config.set_gradient_accumulation_steps(accumulation)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def _mlp(width, depth, classes=10):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return layers + [nn.Linear(width, classes)]


def build(workload, world, rank):
    """(graph, args) of workload over a world of `world` ranks, as rank `rank` makes them (its local data)."""
    rill.manual_seed(0)
    S0, B = rill.sbp.split(0), rill.sbp.broadcast
    everyone = rill.placement("cpu", ranks=list(range(world)))
    batch = 8
    x, y = rill.randn(batch, 64), rill.randint(0, 10, (batch,))
    if workload == "data_parallel":
        model = nn.Sequential(*_mlp(64, 48))
        model.to_global(everyone, B)
        return _Step(model), (x.to_global(everyone, S0), y.to_global(everyone, S0))
    if workload == "pipeline":
        half = max(1, world // 2)
        first = rill.placement("cpu", ranks=list(range(half)))
        second = rill.placement("cpu", ranks=list(range(half, world)) if world > 1 else [0])
        model = nn.Sequential(nn.Sequential(*_mlp(64, 24)[:-1]), nn.Sequential(*_mlp(64, 24)))
        model[0].to_global(first, B)
        model[1].to_global(second, B)
        g = _Step(model, [(model[0], 0, first), (model[1], 1, second)], accumulation=4)
        x, y = rill.randn(4 * batch, 64), rill.randint(0, 10, (4 * batch,))
        return g, (x.to_global(first, S0), y.to_global(second, S0))  # empty on a rank outside the placement
    if workload == "hybrid":  # Megatron-style pairs: a column-parallel Linear, then a row-parallel one
        hidden = 512  # a multiple of every world up to 512 ranks
        layers = []
        for _ in range(16):
            col, row = nn.Linear(64, hidden), nn.Linear(hidden, 64)
            k = hidden // world
            col.weight = nn.Parameter(col.weight.detach()[rank * k:(rank + 1) * k].clone().to_global(everyone, S0))
            col.bias = nn.Parameter(col.bias.detach()[rank * k:(rank + 1) * k].clone().to_global(everyone, S0))
            row.weight = nn.Parameter(row.weight.detach()[:, rank * k:(rank + 1) * k].clone()
                                      .to_global(everyone, rill.sbp.split(1)))
            row.bias = nn.Parameter(row.bias.detach().to_global(everyone, B))
            layers += [col, nn.ReLU(), row, nn.Tanh()]
        head = nn.Linear(64, 10)
        head.to_global(everyone, B)
        model = nn.Sequential(*layers, head)
        return _Step(model), (x.to_global(everyone, B), y.to_global(everyone, B))
    raise ValueError(f"unknown workload {workload!r}; the workloads are {', '.join(WORKLOADS)}")


def _least(cols):
    """Each column's least value: CPU seconds (noise on a shared machine only adds to them), byte counts (the same
    each time) as ints."""
    return [min(c) if k < 2 else int(min(c)) for k, c in enumerate(cols)]


def _row(workload, mode, ranks, simulated, per_rank, master, sent, plan_bytes):
    return {"workload": workload, "mode": mode, "ranks": ranks, "simulated": simulated,
            "per_rank_cpu_s": per_rank, "master_cpu_s": master, "master_bytes_sent": sent, "plan_bytes": plan_bytes}


# --- real worlds ---------------------------------------------------------------------------------------------
def worker(workloads, repeats):
    """Inside each rank of a real world: compile each workload in each mode, as nn.Graph does; rank 0 prints the
    rows (ROW <json>)."""
    import rill.distributed as dist
    import rill.graph
    dist.init_process_group()
    world, rank = dist.get_world_size(), dist.get_rank()
    for workload in workloads:
        for mode in MODES:
            os.environ["RILL_GRAPH_COMPILE_MODE"] = mode
            samples = []
            for k in range(repeats + 1):  # the first warms the caches (inference's, the allocator's) up, untimed
                g, args = build(workload, world, rank)
                job = g._traced_job(*args)
                dist.barrier()
                part, info = rill.graph.compile_job(job, one_at_a_time=True)
                mine = rill.tensor([info["compile_cpu_s"]], dtype=rill.float64)
                every = [rill.zeros(1, dtype=rill.float64) for _ in range(world)]
                dist.all_gather(every, mine)
                cpus = [t.item() for t in every]
                if k > 0:
                    samples.append((max(cpus[1:] or cpus), cpus[0], info["master_bytes_sent"],
                                    len(part.plan_bytes())))
            if rank == 0:
                cols = list(zip(*samples))
                print("ROW " + json.dumps(_row(workload, mode if world > 1 else "local", world, False,
                                               *_least(cols))), flush=True)
    dist.destroy_process_group()


def real_rows(ranks, workloads, repeats):
    from rill.distributed.run import mpirun_command
    rows = []
    for n in ranks:
        cmd, env = mpirun_command(n, os.path.abspath(__file__),
                                  ["--worker", "--workloads", *workloads, "--repeats", str(repeats)])
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"[compile_bench] the world of {n} ranks failed:\n{(p.stdout + p.stderr)[-4000:]}")
        for line in p.stdout.splitlines():
            if line.startswith("ROW "):
                row = json.loads(line[4:])
                if row["mode"] == "local":  # one rank compiles both halves itself, whatever the mode
                    rows += [dict(row, mode=m) for m in MODES if not any(
                        r["mode"] == m and r["workload"] == row["workload"] and r["ranks"] == n for r in rows)]
                else:
                    rows.append(row)
    return rows


# --- simulated worlds ----------------------------------------------------------------------------------------
def simulated_rows(worlds, workloads, repeats):
    """Each simulated world in a fresh process, as each real one is: the heap a world of 256 naive compiles leaves
    behind would slow the next world's compiles down."""
    rows = []
    largest = max(worlds, default=1)
    for n in worlds:
        cmd = [sys.executable, os.path.abspath(__file__), "--simulated-worker", str(n), "--workloads", *workloads,
               "--repeats", str(repeats)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"[compile_bench] the simulated world of {n} ranks failed:\n{(p.stdout + p.stderr)[-4000:]}")
        for line in p.stdout.splitlines():
            row = json.loads(line[4:]) if line.startswith("ROW ") else None
            # each process also compiles for one rank; the rows of one rank kept are the largest world's process's
            if row is not None and (row["ranks"] == n or n == largest):
                rows.append(row)
    return rows


def simulated_worker(n, workloads, repeats):
    """Compile each workload for simulated worlds of 1 and n ranks in this process, the two alternating compile by
    compile (so the baseline of n's ratios ran under the same conditions); print their rows (ROW <json>)."""
    import rill.graph
    from rill import _C
    worlds = sorted({1, n})
    for workload in workloads:
        traced = {}
        for w in worlds:
            with rill.graph.simulated_world(w):
                g, args = build(workload, w, 0)
                traced[w] = g._traced_job(*args).to_bytes()
        for mode in reversed(MODES):  # separate first: naive's hundreds of parts leave a larger heap behind
            samples = {w: [] for w in worlds}
            for k in range(repeats + 1):  # the first warms the caches up, untimed
                for w in worlds:
                    sample = _simulated_compile(_C, traced[w], w, mode)
                    if k > 0:
                        samples[w].append(sample)
            for w in worlds:
                print("ROW " + json.dumps(_row(workload, mode, w, True, *_least(list(zip(*samples[w]))))),
                      flush=True)


def _simulated_compile(_C, traced, n, mode):
    """One compile of the traced job for a simulated world of n ranks in mode, through compile_job's own master and
    worker (the master's messages counted, not sent): (per-rank CPU s, master CPU s, master bytes sent, rank 0's
    plan bytes)."""
    import rill.graph
    sampled = sorted({n // 2, n - 1} - {0})  # the middle and last ranks compile their parts, from their messages
    posted = {}

    def post(dst, message):
        if dst in sampled:
            posted[dst] = message
        header, body = message
        return header.numel() * 8 + body.numel()

    part, info = rill.graph._master(_C._GraphJob.parse(traced), mode, n, post=post,
                                    post_all=lambda message, world: sum(post(r, message) for r in range(1, world)))
    others = []
    for r in sampled:
        payloads = rill.graph._payloads(posted[r], 0)
        others.append(rill.graph._worker(payloads, mode, r)[1]["compile_cpu_s"])
    return (max(others or [info["compile_cpu_s"]]), info["compile_cpu_s"], info["master_bytes_sent"],
            len(part.plan_bytes()))


# --- report --------------------------------------------------------------------------------------------------
def ratios(rows):
    """Per workload, the ratios separate compilation should keep flat and naive should let grow: (workload, name,
    value, bar, holds)."""
    def get(workload, mode, ranks, key, simulated=None):
        for r in rows:
            if (r["workload"], r["mode"], r["ranks"]) == (workload, mode, ranks) and \
                    (simulated is None or r["simulated"] == simulated):
                return r[key]
        return None

    out = []
    for w in sorted({r["workload"] for r in rows}):
        checks = [("separate per-rank CPU, N=8 / N=1", get(w, "separate", 8, "per_rank_cpu_s", False),
                   get(w, "separate", 1, "per_rank_cpu_s", False), "<=", 1.2),
                  ("separate per-rank CPU, simulated N=256 / N=1", get(w, "separate", 256, "per_rank_cpu_s", True),
                   get(w, "separate", 1, "per_rank_cpu_s", True), "<=", 1.3),
                  ("separate master CPU, N=8 / N=1", get(w, "separate", 8, "master_cpu_s", False),
                   get(w, "separate", 1, "master_cpu_s", False), "<=", 1.5),
                  ("naive master CPU, N=8 / N=1", get(w, "naive", 8, "master_cpu_s", False),
                   get(w, "naive", 1, "master_cpu_s", False), ">=", 4.0)]
        for name, num, den, op, bar in checks:
            if num is None or not den:
                continue
            value = num / den
            out.append((w, name, value, f"{op} {bar}", value <= bar if op == "<=" else value >= bar))
    return out


def table(rows):
    lines = [f"{'workload':<14} {'mode':<9} {'ranks':>5} {'sim':>3} {'per-rank cpu s':>14} {'master cpu s':>12} "
             f"{'master sent B':>13} {'plan B':>8}"]
    for r in rows:
        lines.append(f"{r['workload']:<14} {r['mode']:<9} {r['ranks']:>5} {'y' if r['simulated'] else 'n':>3} "
                     f"{r['per_rank_cpu_s']:>14.4f} {r['master_cpu_s']:>12.4f} {r['master_bytes_sent']:>13} "
                     f"{r['plan_bytes']:>8}")
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = [("per_rank_cpu_s", "per-rank compile CPU (s)"), ("master_cpu_s", "master CPU (s)"),
            ("master_bytes_sent", "master bytes sent")]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, title) in zip(axes, keys):
        for c, (w, mode) in enumerate((w, m) for w in WORKLOADS for m in MODES):
            for simulated in (False, True):  # real worlds: filled markers; simulated: hollow
                pts = sorted((r["ranks"], r[key]) for r in rows if r["workload"] == w and r["mode"] == mode
                             and r["simulated"] == simulated and r[key] > 0)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "--" if mode == "naive" else "-",
                            color=colors[c % len(colors)], marker="o", mfc="none" if simulated else None,
                            label=None if simulated else f"{w} {mode}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks (hollow: simulated in one process)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("rill graph compile: naive (rank 0 compiles every plan) vs separate (each rank its own)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m rill.graph.compile_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="*", default=[1, 2, 4, 8], help="real worlds (processes)")
    ap.add_argument("--simulate", type=int, nargs="*", default=[16, 64, 256], help="simulated worlds")
    ap.add_argument("--workloads", nargs="*", default=list(WORKLOADS), choices=WORKLOADS)
    ap.add_argument("--repeats", type=int, default=7, help="compiles per figure (the least CPU time is kept)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    ap.add_argument("--plot", default="compile_bench.png", help="the plot's path ('' for none)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--simulated-worker", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.workloads, a.repeats)
        return
    if a.simulated_worker:
        simulated_worker(a.simulated_worker, a.workloads, a.repeats)
        return
    simulate = sorted(set(a.simulate))
    rows = real_rows(a.ranks, a.workloads, a.repeats) + simulated_rows(simulate, a.workloads, a.repeats)
    rows.sort(key=lambda r: (r["simulated"], WORKLOADS.index(r["workload"]), r["mode"], r["ranks"]))
    if a.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(table(rows))
        print()
        for w, name, value, bar, holds in ratios(rows):
            print(f"{w:<14} {name:<46} {value:7.2f}  (bar {bar}: {'holds' if holds else 'MISSED'})")
    if a.plot:
        plot(rows, a.plot)
        if not a.json:
            print(f"plot: {a.plot}")


if __name__ == "__main__":
    main()
