#!/usr/bin/env python3
"""The eager performance suite: rill vs PyTorch 2.13, side by side in one process run.

    python3 bench/run.py                       # every workload; table on stdout, JSON in bench/results.json
    python3 bench/run.py --only mlp --repeats 11
    python3 bench/run.py --json out.json --threads 1
    python3 bench/run.py --background 2        # with 2 CPU-bound processes beside the suite (a busy machine)

Each workload is timed in rill and in PyTorch alternately (so drift hits both), `--repeats` times after a
warm-up. Before each timing the framework about to be timed runs the workload untimed for SETTLE_S: the
other framework's threads stop spinning (PyTorch's OpenMP workers spin for milliseconds after a parallel
region, rill's VM threads for 200 us) and this one's are awake, as they would be in a loop of its own.
Without it, at 2 intra-op threads, whichever framework ran second in a pair lost a core to the first one's
spinning workers for part of its timing: rill's 1M-float add measured 1.5-2.2x PyTorch's time when timed
right after PyTorch, 1.0-1.1x when settled. The table gives median times, rill/torch (time ratio: lower is better) and the bar the workload
must meet. Both frameworks use the same intra-op thread count (1 by default: on this 2-core machine more
intra-op threads oversubscribe the cores); rill's VM threads are its design and count as its own. Every
timed call ends with a sync point (`item()` or `rill.synchronize()`), so asynchronous work is finished.

Peak memory: each workload also runs a few times in a forked child per framework, which reports how far
its resident set rose above the level at the fork (VmHWM - VmRSS from /proc/self/status). The 100,000-op
workload instead samples the resident set and rill's allocator after every 10,000 ops past the warm-up,
and passes when neither grows.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import rill


def _sync(lib):
    if lib is rill:
        rill.synchronize()


# --- workloads: setup(lib) -> run(), where run() ends at a sync point ---------------------------------

def scalar_loop(lib):
    y = lib.ones(1)

    def run():
        x = lib.ones(1)
        for _ in range(20000):
            x = x + y
        _sync(lib)
    return run


def chain_64(lib):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.random((64, 64), dtype=np.float32))
    b = lib.tensor(rng.random((64, 64), dtype=np.float32))

    def run():
        x = a
        for _ in range(10):  # 30 elementwise ops
            x = x * b
            x = x + a
            x = x.tanh()
        _sync(lib)
    return run


def item_1k(lib):
    v = lib.tensor(np.random.default_rng(0).random(1000, dtype=np.float32))
    return lambda: (v * 2).sum().item()


def matmul_1024(lib):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.random((1024, 1024), dtype=np.float32))
    b = lib.tensor(rng.random((1024, 1024), dtype=np.float32))

    def run():
        a @ b
        _sync(lib)
    return run


def _train_step(lib, model, x, y, loss_fn, optimizer):
    def run():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()
    return run


def tiny_mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((8, 32), dtype=np.float32))
    y = lib.tensor(rng.standard_normal((8, 1), dtype=np.float32))
    return _train_step(lib, model, x, y, nn.MSELoss(), lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))


def mlp_784(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((64, 784), dtype=np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))
    return _train_step(lib, model, x, y, nn.CrossEntropyLoss(), lib.optim.Adam(model.parameters(), lr=1e-3))


def digits_cnn(lib):
    # The CNN of examples/train_digits.py at its batch size (32 images of 8x8).
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.random((32, 64), dtype=np.float32))
    y = lib.tensor(rng.integers(0, 10, 32))
    return _train_step(lib, model, x, y, nn.CrossEntropyLoss(), lib.optim.Adam(model.parameters(), lr=1e-3))


def transformer_block(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((8, 64, 256), dtype=np.float32))
    y = lib.tensor(rng.standard_normal((8, 64, 256), dtype=np.float32))
    return _train_step(lib, model, x, y, nn.MSELoss(), lib.optim.AdamW(model.parameters(), lr=1e-4))


class _Gpt:
    """A minGPT-sized model: token + position embeddings, 4 pre-norm causal blocks (d=128, 4 heads), a head."""

    def __init__(self, lib, vocab=256, d=128, heads=4, layers=4, seq=64):
        nn = lib.nn
        self.lib = lib
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(lib.zeros(1, seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.mask = lib.tensor(np.triu(np.full((seq, seq), -np.inf, dtype=np.float32), 1))
        self.vocab = vocab

    def parameters(self):
        for m in (self.tok, self.blocks, self.norm, self.head):
            yield from m.parameters()
        yield self.pos

    def __call__(self, idx):
        h = self.blocks(self.tok(idx) + self.pos, mask=self.mask)
        return self.head(self.norm(h)).reshape(-1, self.vocab)


def gpt_step(lib):
    lib.manual_seed(0)
    model = _Gpt(lib)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, 256, (16, 64)))
    y = lib.tensor(rng.integers(0, 256, (16 * 64,)))
    return _train_step(lib, model, x, y, lib.nn.CrossEntropyLoss(), lib.optim.AdamW(list(model.parameters()), lr=3e-4))


def cpu_description():
    """The CPU model and the instruction sets that matter here, from /proc/cpuinfo (Linux)."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [x for x in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl") if x in flags]
    return f"{model}, {os.cpu_count()} CPUs, {' '.join(isa) or 'no AVX2'}"


# name -> (setup, calls per timing, ops per call, bar on rill/torch time)
WORKLOADS = {
    "x = x + y, 1 elem, 20k ops (per op)": (scalar_loop, 1, 20000, 0.8),
    "30-op chain on 64x64 (per op)": (chain_64, 20, 30, 0.8),
    "(v * 2).sum().item(), 1k elems": (item_1k, 2000, 1, 0.7),
    "tiny MLP 32-32-32-1 b8 train step": (tiny_mlp, 200, 1, 0.8),
    "MLP 784-512-512-10 b64 train step": (mlp_784, 20, 1, 1.0),
    "digits CNN b32 train step": (digits_cnn, 50, 1, 1.0),
    "transformer d256 h4 s64 b8 train step": (transformer_block, 3, 1, 1.0),
    "GPT 4L d128 h4 s64 b16 AdamW train step": (gpt_step, 3, 1, 1.0),
    "matmul 1024x1024 float32": (matmul_1024, 5, 1, 1.0),
}


SETTLE_S = 0.01


def _time(fn, calls):
    """Seconds per call of fn over `calls` calls, after running it untimed for SETTLE_S (at least once)."""
    t0 = time.perf_counter()
    fn()
    while time.perf_counter() - t0 < SETTLE_S:
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_rss_mib(setup, lib, calls):
    """Resident-set rise (MiB) while a forked child sets up and runs the workload."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: measure, report through the pipe, exit without running atexit handlers
        os.close(r)
        try:
            base = _status_kib("VmRSS")
            fn = setup(lib)
            for _ in range(max(1, min(calls, 20))):
                fn()
            rise = (_status_kib("VmHWM") - base) / 1024
            os.write(w, f"{rise:.1f}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return float(out) if out else float("nan")


def flat_memory_loop(ops=100_000, warmup=10_000, every=10_000):
    """x = x * 1 + 0 style loop of `ops` ops in rill: RSS and allocator bytes sampled after the warm-up."""
    y = rill.ones(64)
    x = rill.ones(64)
    rss, alloc = [], []
    for i in range(1, ops + 1):
        x = x + y if i % 2 else x - y
        if i >= warmup and i % every == 0:
            rill.synchronize()
            rss.append(_status_kib("VmRSS"))
            alloc.append(rill.memory_stats()["allocated_bytes"])
    rill.synchronize()
    return {"rss_kib": rss, "allocated_bytes": alloc,
            "rss_growth_kib": rss[-1] - rss[0], "allocated_growth_bytes": alloc[-1] - alloc[0]}


def start_background(n):
    """n CPU-bound busy-loop processes (a loaded machine: DataLoader workers, a second job, a compile)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(n)]


def stop_background(procs):
    for proc in procs:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="intra-op threads for both frameworks")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", default=None, help="run the workloads whose name contains this")
    p.add_argument("--no-memory", action="store_true", help="skip the forked peak-memory runs")
    p.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json"))
    p.add_argument("--background", type=int, default=0,
                   help="CPU-bound busy-loop processes to run beside the suite (killed at the end)")
    args = p.parse_args(argv)
    background = start_background(args.background)
    try:
        run_suite(args)
    finally:
        stop_background(background)


def run_suite(args):
    rill.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    libs = {"rill": rill, "torch": torch}
    results = []
    cpu = cpu_description()
    print(f"CPU: {cpu}; {args.threads} intra-op thread(s); {args.background} CPU-bound process(es) beside it")
    print(f"{'workload':40s} {'rill (us)':>10s} {'torch (us)':>10s} {'rill/torch':>10s} {'bar':>5s} "
          f"{'rill MiB':>8s} {'torch MiB':>9s}")
    for name, (setup, calls, ops_per_call, bar) in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        fns = {k: setup(lib) for k, lib in libs.items()}
        for fn in fns.values():  # warm-up: caches, allocator pools, oneDNN primitives
            _time(fn, max(1, calls // 4))
        times = {"rill": [], "torch": []}
        for _ in range(args.repeats):
            for k in ("rill", "torch"):
                times[k].append(_time(fns[k], calls) / ops_per_call)
        del fns
        med = {k: statistics.median(v) for k, v in times.items()}
        mem = ({k: float("nan") for k in libs} if args.no_memory
               else {k: peak_rss_mib(setup, lib, calls) for k, lib in libs.items()})
        ratio = med["rill"] / med["torch"]
        results.append({"workload": name, "rill_s": med["rill"], "torch_s": med["torch"], "ratio": ratio,
                        "bar": bar, "meets_bar": ratio <= bar, "rill_peak_mib": mem["rill"],
                        "torch_peak_mib": mem["torch"], "repeats": args.repeats, "threads": args.threads,
                        "background": args.background})
        print(f"{name:40s} {med['rill'] * 1e6:10.2f} {med['torch'] * 1e6:10.2f} {ratio:10.2f} {bar:5.2f} "
              f"{mem['rill']:8.1f} {mem['torch']:9.1f}", flush=True)
    if not args.only or args.only in "100,000-op loop":
        flat = flat_memory_loop()
        flat["workload"] = "100,000-op loop (memory after warm-up)"
        flat["meets_bar"] = flat["allocated_growth_bytes"] <= 0 and flat["rss_growth_kib"] <= 1024
        results.append(flat)
        print(f"{flat['workload']:40s} RSS growth {flat['rss_growth_kib']} KiB, allocator growth "
              f"{flat['allocated_growth_bytes']} B -> {'flat' if flat['meets_bar'] else 'GROWS'}")
    with open(args.json, "w") as f:
        json.dump({"python": sys.version.split()[0], "torch": torch.__version__, "cpu": cpu, "results": results}, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
