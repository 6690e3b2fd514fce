"""Graph mode against eager (rill.nn.Graph vs rill eager vs PyTorch eager), and compile times (issue 17's bars).

One training step (forward, backward, optimizer) per call on the same models in each mode, alternating, medians
of --repeats timings, each ending with a sync; "off" is the graph with the passes --off names turned off
(fuse_elementwise unless given). Compile times are cold: each measurement runs in a fresh process
(nothing of an earlier compile cached: interned symbols, the inference cache, allocator pools), first call timed to
the end of its work.

    python3 bench/graph.py                  # steps and compile times
    python3 bench/graph.py --only compile   # compile times only
    python3 bench/graph.py --only memory    # a step's peak memory: eager's allocator against the graph's plan
    python3 bench/graph.py --torch-compile  # also torch.compile's first call (slow: tens of seconds each)
    python3 bench/graph.py --ab fuse_activation fuse_optimizer --repeats 15  # each pass with and without, A/B
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import rill
from run import SETTLE_S, _time


def mlp_of(lib, sizes, batch, optimizer):
    """Linear layers of sizes with ReLUs between, a batch of inputs and class labels, and optimizer(params)."""
    lib.manual_seed(0)
    nn = lib.nn
    layers = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    x = lib.tensor(np.random.default_rng(0).standard_normal((batch, sizes[0])).astype(np.float32))
    y = lib.tensor(np.random.default_rng(1).integers(0, sizes[-1], batch))
    return model, optimizer(lib.optim, model.parameters()), x, y


def mlp(lib):
    return mlp_of(lib, (64, 128, 128, 10), 64, lambda optim, p: optim.Adam(p, lr=1e-3))


def tiny_mlp(lib):
    return mlp_of(lib, (32, 32, 32, 1), 8, lambda optim, p: optim.SGD(p, lr=0.01))


def wide_mlp(lib):
    return mlp_of(lib, (784, 512, 512, 10), 64, lambda optim, p: optim.SGD(p, lr=0.01))


def cnn(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    x = lib.tensor(np.random.default_rng(0).standard_normal((32, 1, 8, 8)).astype(np.float32))
    y = lib.tensor(np.random.default_rng(1).integers(0, 10, 32))
    return model, lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), x, y


def encoder(lib, d=256, layers=1, seq=32, batch=8):
    lib.manual_seed(0)
    nn = lib.nn
    blocks = [nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True) for _ in range(layers)]
    model = nn.Sequential(*blocks, nn.Flatten(), nn.Linear(seq * d, 10))
    x = lib.tensor(np.random.default_rng(0).standard_normal((batch, seq, d)).astype(np.float32))
    y = lib.tensor(np.random.default_rng(1).integers(0, 10, batch))
    return model, lib.optim.AdamW(model.parameters(), lr=1e-3), x, y


def eager_step(lib, model, opt, x, y):
    loss_fn = lib.nn.CrossEntropyLoss()

    def run():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
    return run


def graph_step(model, opt, x, y, disabled=()):
    class Step(rill.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.loss_fn = model, rill.nn.CrossEntropyLoss()
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss
    g = Step()
    for name in disabled:
        g.config.enable_pass(name, False)
    return g, lambda: g(x, y).item()


def time_steps(name, make, repeats, off=("fuse_elementwise",)):
    r_model, r_opt, rx, ry = make(rill)
    g_model, g_opt, gx, gy = make(rill)
    u_model, u_opt, ux, uy = make(rill)
    t_model, t_opt, tx, ty = make(torch)
    runs = {"rill graph": graph_step(g_model, g_opt, gx, gy)[1],
            "off": graph_step(u_model, u_opt, ux, uy, disabled=off)[1],
            "rill eager": eager_step(rill, r_model, r_opt, rx, ry), "torch eager": eager_step(torch, t_model, t_opt, tx, ty)}
    times = {k: [] for k in runs}
    for _ in range(repeats):
        for k, fn in runs.items():
            times[k].append(_time(fn, 20))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{name:28s} graph {med['rill graph']:8.3f} ms  off {med['off']:8.3f} ms  "
          f"eager {med['rill eager']:8.3f} ms  torch {med['torch eager']:8.3f} ms  "
          f"graph/off {med['rill graph'] / med['off']:5.2f}  graph/eager {med['rill graph'] / med['rill eager']:5.2f}  "
          f"graph/torch {med['rill graph'] / med['torch eager']:5.2f}")


def ab_passes(passes, repeats):
    """Each optional pass's effect on each step row, in one process: two graphs with every pass and two without
    the one, their calls shuffled round by round (the order moves the times on this VM), medians of `repeats`."""
    import random
    rng = random.Random(0)
    for name, make in STEP_ROWS:
        if "encoder" in name:
            continue  # tens of ms a step: the pass figures of the small rows are what the ratio resolves
        for off in passes:
            runs = []
            for mode in ("on", "off", "on", "off"):
                model, opt, x, y = make(rill)
                runs.append((mode, graph_step(model, opt, x, y, disabled=[off] if mode == "off" else [])[1]))
                runs[-1][1]()
            times = {"on": [], "off": []}
            for _ in range(repeats):
                rng.shuffle(runs)
                for mode, fn in runs:
                    times[mode].append(_time(fn, 100))
            on, without = statistics.median(times["on"]), statistics.median(times["off"])
            print(f"{name:28s} {off:24s} with {on * 1e3:8.3f} ms  without {without * 1e3:8.3f} ms  "
                  f"with/without {on / without:5.3f}")


def gelu_by_hand(lib, x):
    """The tanh gelu written out op by op (MLX's fusion example): ten elementwise ops over x."""
    return 0.5 * x * (1.0 + lib.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def softmax_by_hand(lib, x):
    """Attention weights written out: scores scaled, shifted, softmax over the keys, then scaled again (a
    reduction fed by and feeding elementwise ops)."""
    return lib.softmax(x * 0.125 - 1.0, dim=-1) * 0.9 + 0.01


def time_chain(repeats, name, fn, shape):
    """An inference graph of fn: fused (one kernel streaming x once), unfused, rill eager, PyTorch."""
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    rx, tx = rill.tensor(data), torch.tensor(data)

    class Chain(rill.nn.Graph):
        def build(self, x):
            return fn(rill, x)
    fused, plain = Chain(), Chain()
    plain.config.enable_pass("fuse_elementwise", False)
    runs = {"fused": lambda: fused(rx).sum().item(), "unfused": lambda: plain(rx).sum().item(),
            "rill eager": lambda: fn(rill, rx).sum().item(),
            "torch eager": lambda: fn(torch, tx).sum().item()}
    times = {k: [] for k in runs}
    for _ in range(repeats):
        for k, run in runs.items():
            times[k].append(_time(run, 20))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    st = fused.stats()
    print(f"{name + ' ' + 'x'.join(map(str, shape)):28s} fused {med['fused']:7.3f} ms  unfused "
          f"{med['unfused']:7.3f} ms  eager {med['rill eager']:7.3f} ms  torch {med['torch eager']:7.3f} ms  "
          f"fused/unfused {med['fused'] / med['unfused']:5.2f}  fused/torch {med['fused'] / med['torch eager']:5.2f}  "
          f"({st['fused_ops']} ops in {st['fused_kernels']} kernel)")


CHAIN_ROWS = [("gelu by hand", gelu_by_hand, (256, 4096)), ("softmax by hand", softmax_by_hand, (32, 4, 64, 64))]


def time_overhead(repeats, ops=1000):
    """The runtime's cost per task: a graph of `ops` elementwise ops on one element (fusion off, so one task each),
    wall time per op of a call; the kernels' own time is included, so this bounds the overhead from above. In
    order (Note [Plans run in order]) and by the actors' messages (RILL_GRAPH_ACTORS=1)."""
    class Many(rill.nn.Graph):
        def build(self, x):
            for _ in range(ops // 2):
                x = x * 1.0001 + 0.0001
            return x
    x = rill.ones(1)
    graphs = {}
    for mode, actors in (("in order", None), ("actors", "1")):
        rill.set_env_override("RILL_GRAPH_ACTORS", actors)
        try:
            g = Many()
            g.config.enable_pass("fuse_elementwise", False)
            g(x).item()  # compiles
        finally:
            rill.set_env_override("RILL_GRAPH_ACTORS", None)
        graphs[mode] = g
    times = {k: [] for k in graphs}
    for _ in range(repeats):
        for k, g in graphs.items():
            times[k].append(_time(lambda: g(x).item(), 20))
    print(f"{ops} one-element ops, per op:  " + "  ".join(
        f"{k} {statistics.median(v) / ops * 1e6:6.3f} us" for k, v in times.items()) +
        f"  ({graphs['in order'].stats()['plan_tasks']} tasks; bar: wall - kernel <= 1 us per op)")


def peak_bytes(name, make):
    """A step's memory beyond what is held between steps (parameters, optimizer state): rill eager's allocator
    peak during one step (after a first step made the state, gradients set to None) against the graph's planned
    chunk and its lower bound."""
    model, opt, x, y = make(rill)
    step = eager_step(rill, model, opt, x, y)
    step()
    opt.zero_grad()  # the step's gradients are made during it, in both modes
    rill.synchronize()
    rill.reset_peak_memory_stats()
    base = rill.memory_stats()["allocated_bytes"]
    step()
    rill.synchronize()
    eager = rill.memory_stats()["peak_allocated_bytes"] - base
    g_model, g_opt, gx, gy = make(rill)
    g, run = graph_step(g_model, g_opt, gx, gy)
    run()
    st = g.stats()
    print(f"{name:28s} eager step peak {eager:12,d} B  graph planned {st['planned_peak_bytes']:12,d} B "
          f"(lower bound {st['memory_lower_bound_bytes']:,d})  graph/eager {st['planned_peak_bytes'] / eager:5.2f}")


def cold_compile_s(make):
    model, opt, x, y = make(rill)
    g, run = graph_step(model, opt, x, y)
    t0, c0 = time.perf_counter(), time.thread_time()
    run()
    total, cpu = time.perf_counter() - t0, time.thread_time() - c0
    return total, cpu, g.stats()


STEP_ROWS = [("tiny MLP 32-32-32-1 + SGD", tiny_mlp), ("MLP 64-128-128-10 + Adam", mlp),
             ("digits CNN + SGD momentum", cnn), ("MLP 784-512-512-10 + SGD", wide_mlp),
             ("encoder d=256 b32xs32 + AdamW", lambda lib: encoder(lib, batch=32))]

COMPILE_ROWS = [("MLP 64-128-128-10 + Adam", mlp), ("digits CNN + SGD", cnn),
                ("encoder d=64 x4 + AdamW", lambda lib: encoder(lib, d=64, layers=4, seq=16)),
                ("encoder d=64 x24 + AdamW", lambda lib: encoder(lib, d=64, layers=24, seq=16)),
                ("encoder d=64 x48 + AdamW", lambda lib: encoder(lib, d=64, layers=48, seq=16))]


def cold_compile_in_fresh_process(row):
    """cold_compile_s of COMPILE_ROWS[row] in a new interpreter (python3 bench/graph.py --cold-row ROW)."""
    cmd = [sys.executable] + (["-S"] if sys.flags.no_site else []) + [os.path.abspath(__file__), "--cold-row", str(row)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def time_compiles(repeats, torch_compile):
    firsts = {}
    for row, (name, make) in enumerate(COMPILE_ROWS):
        results = [cold_compile_in_fresh_process(row) for _ in range(repeats)]
        total = statistics.median(r["first_s"] for r in results)
        cpu = statistics.median(r["cpu_s"] for r in results)
        compile_s = statistics.median(r["compile_s"] for r in results)
        stats = results[-1]
        firsts[name] = (total, cpu, compile_s)
        print(f"{name:28s} first call {total:7.3f} s, {cpu:7.3f} s CPU of the calling thread "
              f"(compile {compile_s:.3f} s): job_ops "
              f"{stats['job_ops']}, infer_computed {stats['infer_computed']}, hits {stats['infer_cache_hits']}, "
              f"plan_tasks {stats['plan_tasks']}")
        if torch_compile:
            model, opt, x, y = make(torch)
            loss_fn = torch.nn.CrossEntropyLoss()

            @torch.compile
            def step(x, y):
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                return loss
            t0 = time.perf_counter()
            step(x, y).item()
            print(f"{'':28s} torch.compile first call {time.perf_counter() - t0:7.1f} s")
    w4, w24, w48 = (firsts[f"encoder d=64 x{n} + AdamW"] for n in (4, 24, 48))
    for (name, small, blocks) in (("x48 / x4", w4, 12), ("x48 / x24", w24, 2)):
        print(f"{'encoder ' + name:28s} first call {w48[0] / small[0]:5.1f}x wall, {w48[1] / small[1]:5.1f}x CPU, "
              f"compile {w48[2] / small[2]:5.1f}x ({blocks}x the blocks)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", choices=["steps", "compile", "memory"])
    p.add_argument("--ab", nargs="+", metavar="PASS",
                   help="only each pass's effect on the step rows: the graph with and without it, shuffled A/B")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--torch-compile", action="store_true")
    p.add_argument("--off", nargs="+", default=["fuse_elementwise"],
                   help="passes the 'off' column's graph runs without (g.config.optional_passes())")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads of rill and PyTorch (default 1)")
    p.add_argument("--cold-row", type=int, help=argparse.SUPPRESS)  # one cold compile, printed as JSON
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    rill.set_num_threads(args.threads)
    if args.cold_row is not None:
        total, cpu, stats = cold_compile_s(COMPILE_ROWS[args.cold_row][1])
        print(json.dumps(dict(stats, first_s=total, cpu_s=cpu)))
        return 0
    print(f"rill graph mode vs eager; {args.threads} intra-op thread(s); settle {SETTLE_S} s; medians of "
          f"{args.repeats}")
    if args.ab:
        ab_passes(args.ab, args.repeats)
        return 0
    if args.only in (None, "steps"):
        print(f"off: the graph without {', '.join(args.off)}")
        for name, make in STEP_ROWS:
            time_steps(name, make, args.repeats, args.off)
        for name, fn, shape in CHAIN_ROWS:
            time_chain(args.repeats, name, fn, shape)
        time_overhead(args.repeats)
    if args.only in (None, "memory"):
        for name, make in STEP_ROWS:
            peak_bytes(name, make)
    if args.only in (None, "compile"):
        time_compiles(max(1, args.repeats // 2), args.torch_compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
