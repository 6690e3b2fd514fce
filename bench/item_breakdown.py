"""Where the microseconds of Tensor.item() go (docs/architecture.md §3.5), next to PyTorch.

For `(v * 2).sum().item()` on 1,000 elements and for a `x = x + 1; x.item()` loop,
each read is timed in stages with the VM's steady-clock stamps
(rill._C._item_timed):

  issue ops    Python issues the ops before the read (building and submitting them)
  read submit  item()'s entry to the SyncRead's hand-off (reused instruction, no allocation)
  hand-off     submitted -> the scheduler finds it ready (the ops it waits for run here)
  copy+retire  ready -> done (copy the element, retire, complete the signal)
  wake-up      done -> the waiting Python thread returns
  direct       reads whose producer had already finished (no instruction at all)

    python3 bench/item_breakdown.py [--online-us 0 200]
"""
import argparse
import statistics
import time

import numpy as np
import torch

import rill

STAGES = ["issue ops", "read submit", "hand-off", "copy+retire", "wake-up"]


def breakdown(make, n):
    rows, direct = [], 0
    for _ in range(n):
        t0 = rill._C._now_ns()
        s = make()
        enter, submitted, ready, done, woken = rill._C._item_timed(s)
        if not submitted:
            direct += 1
            continue
        rows.append((enter - t0, submitted - enter, ready - submitted, done - ready, woken - done))
    med = [statistics.median(r[k] for r in rows) / 1e3 if rows else float("nan") for k in range(len(STAGES))]
    return med, direct


def per_call(fn, n):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--online-us", type=int, nargs="+", default=[200])
    p.add_argument("-n", type=int, default=4000)
    args = p.parse_args()
    rill.set_num_threads(1)
    torch.set_num_threads(1)
    data = np.random.rand(1000).astype(np.float32)
    v, tv = rill.tensor(data), torch.tensor(data)
    state = {"x": rill.zeros(1), "tx": torch.zeros(1)}

    def rill_loop():
        state["x"] = state["x"] + 1
        return state["x"]

    def rill_loop_item():
        state["x"] = state["x"] + 1
        return state["x"].item()

    def torch_loop_item():
        state["tx"] = state["tx"] + 1
        return state["tx"].item()

    cases = {
        "(v * 2).sum().item(), 1k": (lambda: (v * 2).sum(), lambda: (v * 2).sum().item(),
                                     lambda: (tv * 2).sum().item()),
        "x = x + 1; x.item()": (rill_loop, rill_loop_item, torch_loop_item),
    }
    print(f"{'workload':28s} {'onl':>4s} " + " ".join(f"{s:>11s}" for s in STAGES) +
          f" {'direct':>7s} {'rill us':>8s} {'torch us':>8s} {'ratio':>6s}")
    for online in args.online_us:
        rill.set_env_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", str(online))
        for name, (make, rill_fn, torch_fn) in cases.items():
            med, direct = breakdown(make, args.n)
            r = statistics.median(per_call(rill_fn, args.n // 4) for _ in range(5))
            t = statistics.median(per_call(torch_fn, args.n // 4) for _ in range(5))
            print(f"{name:28s} {online:4d} " + " ".join(f"{m:11.2f}" for m in med) +
                  f" {direct / args.n:7.0%} {r:8.2f} {t:8.2f} {r / t:6.2f}", flush=True)
    rill.set_env_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", None)


if __name__ == "__main__":
    main()
