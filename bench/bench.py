"""rill vs PyTorch, side by side in one process (DESIGN.md §8).

Each workload runs in both frameworks, alternating, for several repeats; we
report the median time per call and rill/torch (time ratio: lower is better;
throughput relative to PyTorch is its inverse). Both frameworks use the same
intra-op thread count, once per value of --threads.

    python3 bench/bench.py                 # all workloads, 1 and 2 threads
    python3 bench/bench.py --only matmul   # one workload
"""
import argparse
import statistics
import time

import numpy as np
import torch

import rill


def _time_per_call(fn, calls, sync):
    fn()  # warm-up
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls


def workloads():
    """name -> (setup(lib) -> fn, calls per timing)."""
    def scalar_loop(lib):
        x = lib.ones(1)
        y = lib.ones(1)

        def run():
            nonlocal x
            for _ in range(1000):
                x = x + y
        return run

    def add_1m(lib):
        a = lib.tensor(np.random.rand(1 << 20).astype(np.float32))
        b = lib.tensor(np.random.rand(1 << 20).astype(np.float32))
        return lambda: a + b

    def sum_1m(lib):
        a = lib.tensor(np.random.rand(1 << 20).astype(np.float32))
        return lambda: a.sum()

    def matmul_1024(lib):
        a = lib.tensor(np.random.rand(1024, 1024).astype(np.float32))
        b = lib.tensor(np.random.rand(1024, 1024).astype(np.float32))
        return lambda: a @ b

    return {
        "x = x + y, 1 element (per op)": (scalar_loop, 5, 1000),
        "add, 1M float32": (add_1m, 200, 1),
        "sum, 1M float32": (sum_1m, 200, 1),
        "matmul 1024x1024 float32": (matmul_1024, 5, 1),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", default=None, help="substring of the workload names to run")
    args = p.parse_args()
    syncs = {"rill": rill.synchronize, "torch": lambda: None}
    libs = {"rill": rill, "torch": torch}
    print(f"{'workload':34s} {'thr':>3s} {'rill (us)':>11s} {'torch (us)':>11s} {'rill/torch':>10s}")
    for threads in args.threads:
        rill.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, (setup, calls, ops_per_call) in workloads().items():
            if args.only and args.only not in name:
                continue
            fns = {k: setup(lib) for k, lib in libs.items()}
            times = {"rill": [], "torch": []}
            for _ in range(args.repeats):
                for k in ("rill", "torch"):  # alternate, so drift hits both
                    times[k].append(_time_per_call(fns[k], calls, syncs[k]) / ops_per_call)
            r = statistics.median(times["rill"])
            t = statistics.median(times["torch"])
            print(f"{name:34s} {threads:3d} {r * 1e6:11.2f} {t * 1e6:11.2f} {r / t:10.2f}", flush=True)


if __name__ == "__main__":
    main()
