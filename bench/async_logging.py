"""Steps/s of examples/async_logging.py's training loop with per-step logging done
in the loop (`loss.item()`) vs on an async VM thread, and PyTorch's loop with
`loss.item()` for reference. Medians of --repeats runs.

    python3 bench/async_logging.py
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import async_logging  # noqa: E402


def torch_steps_per_s(steps, lr=0.1):
    x, y = async_logging.make_data()
    x, y = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())
    n, d = x.shape
    w = torch.zeros(d, 1)
    lines = []
    start = time.perf_counter()
    for step in range(steps):
        err = x @ w - y
        loss = (err * err).mean()
        lines.append(f"step {step:4d}  loss {loss.item():.6f}")
        grad = x.t() @ err * (2.0 / n)
        w = w - lr * grad
    ((x @ w - y) ** 2).mean().item()
    return steps / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    rates = {"rill, item() in the loop": [], "rill, async logging thread": [], "torch, item() in the loop": []}
    for _ in range(args.repeats):
        rates["rill, item() in the loop"].append(async_logging.train(args.steps, False)[0])
        rates["rill, async logging thread"].append(async_logging.train(args.steps, True)[0])
        rates["torch, item() in the loop"].append(torch_steps_per_s(args.steps))
    base = statistics.median(rates["torch, item() in the loop"])
    print(f"{'training loop with per-step logging':32s} {'steps/s':>9s} {'vs torch':>9s}")
    for name, r in rates.items():
        m = statistics.median(r)
        print(f"{name:32s} {m:9.1f} {m / base:9.2f}")


if __name__ == "__main__":
    main()
