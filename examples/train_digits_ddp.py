#!/usr/bin/env python3
"""Train the digits MLP (examples/train_digits.py's) with DistributedDataParallel over N processes.

    python3 -m rill.distributed.run --nproc 2 examples/train_digits_ddp.py            # rill, 2 ranks
    python3 -m rill.distributed.run --nproc 3 examples/train_digits_ddp.py --epochs 5
    python3 -m rill.distributed.run --nproc 2 examples/train_digits_ddp.py --check    # + the equivalence check

Each rank reads its share of scikit-learn's bundled digits through a DistributedSampler, DDP averages the
gradients over the ranks during backward, and rank 0 prints the progress, the test accuracy (bar: >= 95%)
and saves the model (the wrapped module's state dict, without DDP's `module.` prefix). --check first trains
20 SGD steps with batch 32 per rank and compares the parameters with one process training on the whole
batch of 32 * N (bar: the same within 1e-5). Everything is PyTorch code: `torch` is rill.
"""
import argparse
import os
import sys
import time

import numpy as np

import rill as torch
import rill.distributed as dist
import rill.nn as nn
from rill.nn.parallel import DistributedDataParallel as DDP
from rill.utils.data import DataLoader, TensorDataset
from rill.utils.data.distributed import DistributedSampler


def build():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def log(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


def check_equivalence(x, y, steps=20, batch=32):
    """DDP over N ranks with batch `batch` each == one process with batch batch * N (every rank checks)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    big = batch * world
    criterion = nn.CrossEntropyLoss()
    torch.manual_seed(0)
    single = build()
    opt = torch.optim.SGD(single.parameters(), lr=0.1)
    rows = [np.arange(i * big, (i + 1) * big) % len(x) for i in range(steps)]  # step i's batch of batch * N
    for i in range(steps):
        opt.zero_grad()
        criterion(single(torch.tensor(x[rows[i]])), torch.tensor(y[rows[i]])).backward()
        opt.step()
    torch.manual_seed(0)
    model = DDP(build())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(steps):
        mine = rows[i][rank * batch:(rank + 1) * batch]
        opt.zero_grad()
        criterion(model(torch.tensor(x[mine])), torch.tensor(y[mine])).backward()
        opt.step()
    diff = max(float((p - q).abs().max()) for p, q in zip(model.module.parameters(), single.parameters()))
    worst = torch.tensor([diff], dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    ok = worst.item() <= 1e-5
    log(f"check: {steps} SGD steps of DDP over {world} ranks (batch {batch} each) vs one process (batch {big}): "
        f"max parameter difference {worst.item():.2e} (bar 1e-5) -> {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs")
    p.add_argument("--check", action="store_true", help="also check DDP against one process (see above)")
    args = p.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    ok = True
    if args.check:
        ok &= check_equivalence(x, y)

    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=args.seed, stratify=y)
    train_set = TensorDataset(torch.tensor(x_train), torch.tensor(y_train))
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    x_test_t, y_test_t = torch.tensor(x_test), torch.tensor(y_test)
    log(f"digits: {len(train_set)} train / {len(y_test)} test images, {world} ranks, batch {args.batch_size} "
        f"per rank ({args.batch_size * world} in all), {len(loader)} steps per epoch")

    torch.manual_seed(args.seed + rank)  # different starts on purpose: DDP broadcasts rank 0's parameters
    model = DDP(build())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(())
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)  # the ranks' mean of their summed losses
        model.eval()
        with torch.no_grad():
            acc = (model(x_test_t).argmax(dim=1) == y_test_t).float().mean().item()
        log(f"  epoch {epoch + 1}/{args.epochs}: train loss {total.item() / len(loader):.4f}, test accuracy {acc:.4f}")
    seconds = time.perf_counter() - start
    # Every replica holds the same parameters.
    first = torch.cat([q.detach().reshape(-1) for q in model.module.parameters()])
    spread = first.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    same = float((spread - first).abs().max()) == 0.0
    passed = acc >= 0.95 and same
    ok &= passed
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "digits_mlp_ddp.pt")
        torch.save(model.module.state_dict(), path)
        reloaded = build()
        reloaded.load_state_dict(torch.load(path))
        with torch.no_grad():
            reloaded_acc = (reloaded(x_test_t).argmax(dim=1) == y_test_t).float().mean().item()
        print(f"mlp over {world} ranks: test accuracy {acc:.4f} (bar 0.95) in {seconds:.1f} s, replicas "
              f"{'identical' if same else 'DIFFERENT'}; saved to {path}, reloaded accuracy {reloaded_acc:.4f} -> "
              f"{'PASS' if passed else 'FAIL'}", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
