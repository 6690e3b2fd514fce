"""A pipeline's bubble against (p - 1)/(m + p - 1), and its speedup over one stage against p·m/(m + p - 1),
measured from the actors' trace with kernels of a fixed
duration (rill.experimental.sleep), so that the two cores of a small machine do not confound it.

    python3 bench/pipeline.py                          # p = 2 and 4 stages, m = 8, 16, 32 micro-batches
    python3 bench/pipeline.py --stages 2 --micro 8 --sleep 0.005
    python3 bench/pipeline.py --ssp                    # SSP's throughput against the synchronous 1F1B at m = p

Each stage is one rank running one block whose forward and backward each sleep --sleep seconds. For every (p, m)
it runs the pipeline over p processes (python -m rill.distributed.run) with RILL_GRAPH_TRACE set, and the same p
blocks as one stage in one process, and reads each rank's trace (tools/merge_graph_traces.py): the last
iteration's span is its first fixed-duration kernel's start to its last one's end over all ranks, a rank's busy
time the sum of its fixed-duration kernels, the bubble 1 - mean busy / span, against the ideal
(p - 1) / (m + p - 1); the speedup is the one stage's span over the pipeline's, against p * m / (m + p - 1).

--ssp compares throughput, time per micro-batch: the synchronous pipeline at m = p (one SGD step per call, on p
micro-batches) against SSP (config.enable_ssp: each micro-batch a step, early stages on stale weights) at each m,
against the ideal ratio ((2p - 1) / p) / ((m + p - 1) / m): both fill and drain the pipeline once per call.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))


def worker(args):
    import rill
    import rill.distributed as dist
    from rill import nn
    from rill.nn.graph import GraphModule

    dist.init_process_group()
    os.environ["RILL_GRAPH_TRACE"] = os.path.join(args.trace, "trace.json")  # each rank its own file
    p = args.stages

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(rill.ones(1))

        def forward(self, x):
            return rill.experimental.sleep(x * self.w, args.sleep)

    model = nn.Sequential(*[Block() for _ in range(p)])

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            for k, block in enumerate(model):
                ranks = [0] if args.one_stage else [k]
                block.to(GraphModule).set_stage(0 if args.one_stage else k, rill.placement("cpu", ranks=ranks))
            self.add_optimizer(rill.optim.SGD(model.parameters(), lr=1e-3))
            self.config.set_gradient_accumulation_steps(args.micro)
            self.config.enable_ssp(args.ssp)

        def build(self, x):
            loss = (self.model(x) ** 2).sum()  # the gradient depends on the forward: backward waits for it
            loss.backward()
            return loss

    step = Step()
    first = rill.placement("cpu", ranks=[0])
    x = rill.ones(args.micro, 4).to_global(first, rill.sbp.broadcast)
    for _ in range(1 + args.iters):
        step(x)
    rill.synchronize()
    nn.Graph.write_trace()
    dist.barrier()
    dist.destroy_process_group()


def measure(files):
    """(span_us, [busy_us per rank]) of the last iteration of the traces: its fixed-duration kernels only (the
    ranks start an iteration as soon as they finished the last one, and then wait for their first input)."""
    from merge_graph_traces import load, merge
    events = [e for e in merge(load(files)) if e.get("ph") == "X"]
    last = max(e["args"]["iteration"] for e in events)
    work = [e for e in events if e["args"]["iteration"] == last and e["args"]["op"] == "_sleep"]
    span = max(e["ts"] + e["dur"] for e in work) - min(e["ts"] for e in work)
    busy = {}
    for e in work:
        busy[e["pid"]] = busy.get(e["pid"], 0.0) + e["dur"]
    return span, list(busy.values())


def run(stages, micro, sleep, iters, one_stage, ssp=False):
    with tempfile.TemporaryDirectory() as tmp:
        nproc = 1 if one_stage else stages
        cmd = [sys.executable, "-m", "rill.distributed.run", "--nproc", str(nproc), __file__, "--worker",
               "--stages", str(stages), "--micro", str(micro), "--sleep", str(sleep), "--iters", str(iters),
               "--trace", tmp] + (["--one-stage"] if one_stage else []) + (["--ssp"] if ssp else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit(p.stdout[-3000:] + p.stderr[-3000:])
        return measure(sorted(glob.glob(os.path.join(tmp, "trace.rank*.json"))))


def compare_ssp(args):
    print(f"{'p':>2} {'m':>3} | {'sync m=p ms':>11} {'ssp ms':>7} (per micro-batch) | {'ratio':>6} {'ideal':>6} "
          f"(bar 1.2)")
    for p in args.stages:
        sync, _ = run(p, p, args.sleep, args.iters, False)
        for m in args.micro:
            ssp, _ = run(p, m, args.sleep, args.iters, False, ssp=True)
            ratio, ideal = (sync / p) / (ssp / m), ((2 * p - 1) / p) / ((m + p - 1) / m)
            print(f"{p:>2} {m:>3} | {sync / p / 1e3:11.2f} {ssp / m / 1e3:7.2f}                  | {ratio:6.2f} "
                  f"{ideal:6.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--micro", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--sleep", type=float, default=0.01, help="seconds each block's forward (and backward) sleeps")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ssp", action="store_true", help="SSP's throughput against the synchronous pipeline's")
    ap.add_argument("--one-stage", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--trace", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.stages = args.stages[0]
        args.micro = args.micro[0]
        return worker(args)
    if args.ssp:
        return compare_ssp(args)
    print(f"{'p':>2} {'m':>3} | {'bubble':>7} {'ideal':>7} {'diff pp':>7} (bar 3) | {'speedup':>7} {'ideal':>6} "
          f"{'ratio':>6} (bar 0.95) | span ms")
    rows = []
    for p in args.stages:
        for m in args.micro:
            span, busy = run(p, m, args.sleep, args.iters, False)
            one, _ = run(p, m, args.sleep, args.iters, True)
            bubble = 1 - sum(busy) / len(busy) / span
            ideal = (p - 1) / (m + p - 1)
            speedup, ideal_speedup = one / span, p * m / (m + p - 1)
            rows.append(dict(p=p, m=m, bubble=bubble, ideal=ideal, speedup=speedup, ideal_speedup=ideal_speedup,
                             span_ms=span / 1e3, one_stage_ms=one / 1e3))
            print(f"{p:>2} {m:>3} | {bubble:7.3f} {ideal:7.3f} {100 * abs(bubble - ideal):7.2f}         | "
                  f"{speedup:7.2f} {ideal_speedup:6.2f} {speedup / ideal_speedup:6.3f}            | {span / 1e3:.1f}",
                  flush=True)
    with open(os.path.join(HERE, "pipeline_results.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
