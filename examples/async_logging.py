"""Per-step metric logging on an async VM thread (DESIGN.md §3.7).

A training loop that logs every step with `loss.item()` drains the VM each step:
Python waits for the step's compute before it can issue the next one. Here the
loss is cloned right after the forward pass and handed to a logging thread bound
to its own VM thread (`rill.asyncs.thread`); its `item()` waits for that clone
only, so the training thread keeps issuing work and never syncs.

    python3 examples/async_logging.py              # both ways, steps/s of each
    python3 examples/async_logging.py --steps 500

The model is a linear regression with its gradient written out, so the example
needs only matmul and elementwise ops.
"""
import argparse
import queue
import threading
import time

import numpy as np

import rill


def make_data(n=2048, d=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w_true = rng.standard_normal((d, 1)).astype(np.float32)
    y = x @ w_true + 0.01 * rng.standard_normal((n, 1)).astype(np.float32)
    return rill.tensor(x), rill.tensor(y)


def train(steps, async_logging, lr=0.1, log=None):
    """Run `steps` of gradient descent, logging the loss of every step; returns (steps/s, log lines)."""
    x, y = make_data()
    n, d = x.shape
    w = rill.zeros(d, 1)
    lines = [] if log is None else log
    q = queue.Queue()

    def logger():  # formats and records one line per step
        t = rill.asyncs.Thread()
        with rill.asyncs.thread(t):
            while (item := q.get()) is not None:
                step, loss = item
                lines.append(f"step {step:4d}  loss {loss.item():.6f}")
        t.close()

    th = threading.Thread(target=logger) if async_logging else None
    if th:
        th.start()
    start = time.perf_counter()
    for step in range(steps):
        err = x @ w - y                      # forward
        loss = (err * err).mean()
        if async_logging:
            q.put((step, loss.clone()))      # logged on the logger's VM thread
        else:
            lines.append(f"step {step:4d}  loss {loss.item():.6f}")  # syncs this thread
        grad = x.t() @ err * (2.0 / n)       # backward, by hand
        w = w - lr * grad                    # update
    if th:
        q.put(None)
        th.join()
    final = ((x @ w - y) ** 2).mean().item()
    elapsed = time.perf_counter() - start
    return steps / elapsed, lines, final


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    for mode in (False, True):
        rate, lines, final = train(args.steps, mode)
        assert len(lines) == args.steps
        print(lines[0])
        print(lines[-1])
        name = "async logging thread" if mode else "item() in the loop  "
        print(f"{name}: {rate:8.1f} steps/s   final loss {final:.6f}")


if __name__ == "__main__":
    main()
