#!/usr/bin/env python3
"""Train the digits MLP (examples/train_digits.py's) in graph mode over N processes, with global tensors.

    python3 -m rill.distributed.run --nproc 2 examples/train_digits_graph_parallel.py           # data parallel
    python3 -m rill.distributed.run --nproc 2 examples/train_digits_graph_parallel.py --check   # + the checks

Data parallelism in graph mode (docs/global.md): the model's parameters are global tensors broadcast over the
placement of every rank, each batch is a global tensor split along dim 0 (each rank gives its rows), and one
rill.nn.Graph compiles the training step. The compiler's SBP pass finds the gradients to be partial sums and
inserts their all-reduce before the optimizer's update; nothing in the model or the step says so. Rank 0 prints
the progress and the test accuracy (bar: >= 95%), computed by an inference graph over the same global parameters.
--check first trains 20 SGD steps this way and compares every parameter with one process training on the whole
batch, then does the same for a column-parallel + row-parallel pair of Linear layers (the first's weight split
along its output features, the second's along its input features) against the plain model (bars: within 1e-5).
"""
import argparse
import sys
import time

import numpy as np

import rill
import rill.distributed as dist
import rill.nn as nn


def build():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def log(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


class TrainStep(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


class Predict(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x).argmax(dim=1)


def my_rows(t, placement):
    """This rank's rows of t (the whole batch, the same on every rank) as a global tensor split along dim 0."""
    n = t.shape[0] // len(placement.ranks)
    k = placement.ranks.index(dist.get_rank())
    return t[k * n:(k + 1) * n].clone().to_global(placement, rill.sbp.split(0))


def max_difference(pairs):
    worst = rill.tensor([max(float(np.abs(a - b).max()) for a, b in pairs)], dtype=rill.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return worst.item()


def check_data_parallel(x, y, placement, steps=20, batch=32):
    """Graph data parallelism over the ranks, batch `batch` each == one process on the whole batch."""
    world = len(placement.ranks)
    big = batch * world
    rows = [np.arange(i * big, (i + 1) * big) % len(x) for i in range(steps)]
    rill.manual_seed(0)
    single = build()
    step = TrainStep(single, rill.optim.SGD(single.parameters(), lr=0.1))
    for r in rows:
        step(rill.tensor(x[r]), rill.tensor(y[r]))
    rill.manual_seed(0)
    model = build().to_global(placement, rill.sbp.broadcast)
    step = TrainStep(model, rill.optim.SGD(model.parameters(), lr=0.1))
    for r in rows:
        step(my_rows(rill.tensor(x[r]), placement), my_rows(rill.tensor(y[r]), placement))
    diff = max_difference((p.to_local().numpy(), q.detach().numpy())
                          for p, q in zip(model.parameters(), single.parameters()))
    ok = diff <= 1e-5
    log(f"check: {steps} SGD steps of graph data parallelism over {world} ranks (batch {batch} each) vs one process "
        f"(batch {big}): max parameter difference {diff:.2e} (bar 1e-5) -> {'PASS' if ok else 'FAIL'}")
    return ok


def check_tensor_parallel(x, y, placement, steps=20, batch=64):
    """A column-parallel then row-parallel Linear pair (weights split(0), then split(1)) == the plain pair."""
    world, k = len(placement.ranks), placement.ranks.index(dist.get_rank())
    hidden = 120 if 120 % world == 0 else 32 * world  # the features split evenly over the ranks

    def pair():
        rill.manual_seed(1)
        return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    plain = pair()
    step = TrainStep(plain, rill.optim.Adam(plain.parameters(), lr=1e-3))
    parallel = pair()
    first, second = parallel[0], parallel[2]
    n = hidden // world
    first.weight = nn.Parameter(first.weight.detach()[k * n:(k + 1) * n].clone().to_global(placement,
                                                                                           rill.sbp.split(0)))
    first.bias = nn.Parameter(first.bias.detach()[k * n:(k + 1) * n].clone().to_global(placement, rill.sbp.split(0)))
    second.weight = nn.Parameter(second.weight.detach()[:, k * n:(k + 1) * n].clone().to_global(placement,
                                                                                               rill.sbp.split(1)))
    second.bias = nn.Parameter(second.bias.detach().to_global(placement, rill.sbp.broadcast))
    pstep = TrainStep(parallel, rill.optim.Adam(parallel.parameters(), lr=1e-3))
    for i in range(steps):
        r = np.arange(i * batch, (i + 1) * batch) % len(x)
        xb, yb = rill.tensor(x[r]), rill.tensor(y[r])
        step(xb, yb)
        pstep(xb.to_global(placement, rill.sbp.broadcast), yb.to_global(placement, rill.sbp.broadcast))
    diff = max_difference([
        (first.weight.to_local().numpy(), plain[0].weight.detach().numpy()[k * n:(k + 1) * n]),
        (first.bias.to_local().numpy(), plain[0].bias.detach().numpy()[k * n:(k + 1) * n]),
        (second.weight.to_local().numpy(), plain[2].weight.detach().numpy()[:, k * n:(k + 1) * n]),
        (second.bias.to_local().numpy(), plain[2].bias.detach().numpy())])
    ok = diff <= 1e-5
    log(f"check: {steps} Adam steps of a column-parallel + row-parallel Linear pair over {world} ranks vs the plain "
        f"model: max parameter difference {diff:.2e} (bar 1e-5) -> {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true", help="also run the checks (see above)")
    args = p.parse_args()

    dist.init_process_group("mpi")
    world = dist.get_world_size()
    placement = rill.placement("cpu", ranks=list(range(world)))
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    ok = True
    if args.check:
        ok &= check_data_parallel(x, y, placement)
        ok &= check_tensor_parallel(x, y, placement)

    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=args.seed, stratify=y)
    big = args.batch_size * world
    steps = len(x_train) // big
    log(f"digits: {len(x_train)} train / {len(y_test)} test images, {world} ranks, batch {args.batch_size} per rank "
        f"({big} in all), {steps} steps per epoch, graph mode")
    rill.manual_seed(args.seed + dist.get_rank())  # different starts on purpose: to_global broadcasts rank 0's
    model = build().to_global(placement, rill.sbp.broadcast)
    step = TrainStep(model, rill.optim.Adam(model.parameters(), lr=args.lr))
    predict = Predict(model)
    x_test_g = rill.tensor(x_test).to_global(placement, rill.sbp.broadcast)
    rng = np.random.default_rng(args.seed)  # the same order on every rank: each takes its rows of each batch
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        total = 0.0
        for s in range(steps):
            r = order[s * big:(s + 1) * big]
            loss = step(my_rows(rill.tensor(x_train[r]), placement), my_rows(rill.tensor(y_train[r]), placement))
            total += loss.to_local().item()
        predicted = predict(x_test_g).to_local()
        acc = (predicted == rill.tensor(y_test)).float().mean().item()
        log(f"  epoch {epoch + 1}/{args.epochs}: train loss {total / steps:.4f}, test accuracy {acc:.4f}")
    seconds = time.perf_counter() - start
    first = rill.cat([q.to_local().reshape(-1) for q in model.parameters()])
    spread = first.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    same = float((spread - first).abs().max()) == 0.0
    passed = acc >= 0.95 and same
    ok &= passed
    log(f"graph mlp over {world} ranks: test accuracy {acc:.4f} (bar 0.95) in {seconds:.1f} s, replicas "
        f"{'identical' if same else 'DIFFERENT'} -> {'PASS' if passed else 'FAIL'}")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
