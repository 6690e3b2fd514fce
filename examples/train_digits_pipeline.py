#!/usr/bin/env python3
"""Train the digits MLP (examples/train_digits.py's) as a pipeline of stages over processes, in graph mode.

    python3 -m rill.distributed.run --nproc 2 examples/train_digits_pipeline.py           # 2 stages
    python3 -m rill.distributed.run --nproc 2 examples/train_digits_pipeline.py --check   # + the check
    python3 -m rill.distributed.run --nproc 2 examples/train_digits_pipeline.py --ssp --micro-batches 8 \
        --batch-size 256                                                                  # SSP

The model is cut in two: stage 0 (the first Linear and ReLU) runs on rank 0, stage 1 (the rest and the loss) on
the other ranks (docs/global.md, "Pipelines"). `block.to(GraphModule).set_stage(stage_id, placement)` in the
graph's __init__ is all the model says; with set_gradient_accumulation_steps(m) each batch runs as m
micro-batches, the activations go forward and their gradients back between the ranks, and stage 0 starts the
next micro-batch while stage 1 works on the last one. --check first trains 20 SGD steps and compares each step's
loss with one process running the same micro-batches eagerly (bar: within 1e-5). The last stage's rank prints
the progress and the test accuracy (bar: >= 95%).

--ssp turns on stale synchronous pipelining (config.enable_ssp, docs/global.md "SSP"): each micro-batch is an
Adam step of its own, and stage 0 runs on weights up to one update old, so it never waits for stage 1's update;
the last line then gives the staleness each stage saw. --json prints one JSON line of the results (accuracy,
training samples per second from the median epoch, staleness), which bench/ssp.py reads.
"""
import argparse
import sys
import time

import numpy as np

import rill
import rill.distributed as dist
import rill.nn as nn
from rill.nn.graph import GraphModule


def build():
    return nn.Sequential(nn.Sequential(nn.Linear(64, 128), nn.ReLU()),
                         nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)))


class PipelineStep(nn.Graph):
    def __init__(self, model, optimizer, stages, micro_batches, ssp=False):
        super().__init__()
        self.model = model
        for k, (block, placement) in enumerate(zip(model, stages)):
            block.to(GraphModule).set_stage(k, placement)
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)
        self.config.set_gradient_accumulation_steps(micro_batches)
        self.config.enable_ssp(ssp)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


class Predict(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model  # its blocks keep their stages

    def build(self, x):
        return self.model(x).argmax(dim=1)


def check(x, y, stages, micro, steps=20, batch=64):
    """Each step's loss of the pipeline == one process running the same micro-batches eagerly."""
    rill.manual_seed(0)
    single = build()
    opt = rill.optim.SGD(single.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    rill.manual_seed(0)
    model = build()
    step = PipelineStep(model, rill.optim.SGD(model.parameters(), lr=0.1), stages, micro)
    worst = 0.0
    for i in range(steps):
        r = np.arange(i * batch, (i + 1) * batch) % len(x)
        xb, yb = rill.tensor(x[r]), rill.tensor(y[r])
        want = 0.0
        opt.zero_grad()
        for k in range(micro):
            part = slice(k * batch // micro, (k + 1) * batch // micro)
            loss = criterion(single(xb[part]), yb[part]) / micro
            loss.backward()
            want += loss.item()
        opt.step()
        got = step(xb.to_global(stages[0], rill.sbp.broadcast), yb.to_global(stages[-1], rill.sbp.broadcast))
        if dist.get_rank() in stages[-1].ranks:
            worst = max(worst, abs(got.to_local().item() - want))
    total = rill.tensor([worst], dtype=rill.float64)
    dist.all_reduce(total, op=dist.ReduceOp.MAX)
    ok = total.item() <= 1e-5
    if dist.get_rank() == stages[-1].ranks[0]:
        print(f"check: {steps} SGD steps of a {len(stages)}-stage pipeline, {micro} micro-batches each, vs one "
              f"process running them eagerly: max loss difference {total.item():.2e} (bar 1e-5) -> "
              f"{'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def ssp_summary(step, stages):
    """[(most updates any micro-batch's weights lacked, the bound)] per stage, gathered from the stages' ranks."""
    ssp = step.stats()["ssp"]
    seen = rill.zeros(len(stages), 2, dtype=rill.int64)
    for stage, most in ssp["max_staleness"].items():
        seen[stage] = rill.tensor([most, ssp["bound"][stage]])
    dist.all_reduce(seen, op=dist.ReduceOp.MAX)
    return [tuple(row) for row in seen.tolist()]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true", help="also check against one process (see above)")
    p.add_argument("--ssp", action="store_true", help="stale synchronous pipelining (see above)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON line (bench/ssp.py)")
    args = p.parse_args()

    dist.init_process_group("mpi")
    world = dist.get_world_size()
    if world < 2:
        raise SystemExit("run it over 2 or more processes: python3 -m rill.distributed.run --nproc 2 ...")
    stages = [rill.placement("cpu", ranks=[0]), rill.placement("cpu", ranks=list(range(1, world)))]
    last = dist.get_rank() in stages[-1].ranks
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    ok = check(x, y, stages, args.micro_batches) if args.check else True

    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=args.seed, stratify=y)
    steps = len(x_train) // args.batch_size
    if dist.get_rank() == stages[-1].ranks[0]:
        print(f"digits: {len(x_train)} train / {len(y_test)} test images, stage 0 on rank 0, stage 1 on ranks "
              f"{stages[1].ranks}, batch {args.batch_size} as {args.micro_batches} micro-batches"
              f"{' (SSP: each an Adam step)' if args.ssp else ''}, {steps} calls per epoch", flush=True)
    rill.manual_seed(args.seed)
    model = build()
    step = PipelineStep(model, rill.optim.Adam(model.parameters(), lr=args.lr), stages, args.micro_batches,
                        ssp=args.ssp)
    predict = Predict(model)
    x_test_g = rill.tensor(x_test).to_global(stages[0], rill.sbp.broadcast)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    acc = 0.0
    epoch_seconds = []
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        total = 0.0
        began = time.perf_counter()
        for s in range(steps):
            r = order[s * args.batch_size:(s + 1) * args.batch_size]
            loss = step(rill.tensor(x_train[r]).to_global(stages[0], rill.sbp.broadcast),
                        rill.tensor(y_train[r]).to_global(stages[-1], rill.sbp.broadcast))
            if last:
                total += loss.to_local().item()
        rill.synchronize()  # the epoch's steps have run
        epoch_seconds.append(time.perf_counter() - began)
        predicted = predict(x_test_g)
        if last:
            acc = (predicted.to_local() == rill.tensor(y_test)).float().mean().item()
        if dist.get_rank() == stages[-1].ranks[0]:
            print(f"  epoch {epoch + 1}/{args.epochs}: train loss {total / steps:.4f}, test accuracy {acc:.4f}",
                  flush=True)
    seconds = time.perf_counter() - start
    best = rill.tensor([acc], dtype=rill.float64)
    dist.all_reduce(best, op=dist.ReduceOp.MAX)  # the last stage's accuracy, on every rank
    passed = best.item() >= 0.95
    ok &= passed
    if dist.get_rank() == stages[-1].ranks[0]:
        print(f"pipeline mlp over {world} ranks: test accuracy {best.item():.4f} (bar 0.95) in {seconds:.1f} s -> "
              f"{'PASS' if passed else 'FAIL'}", flush=True)
    staleness = ssp_summary(step, stages) if args.ssp else None
    if dist.get_rank() == stages[-1].ranks[0]:
        if staleness is not None:
            print("ssp: " + ", ".join(f"stage {s} at most {m} update{'' if m == 1 else 's'} stale (bound {b})"
                                      for s, (m, b) in enumerate(staleness)), flush=True)
        if args.json:
            import json
            per_epoch = sorted(epoch_seconds[1:] or epoch_seconds)[len(epoch_seconds[1:] or epoch_seconds) // 2]
            print(json.dumps({"ssp": args.ssp, "micro_batches": args.micro_batches, "batch_size": args.batch_size,
                              "epochs": args.epochs, "accuracy": best.item(),
                              "samples_per_s": steps * args.batch_size / per_epoch,
                              "staleness": staleness}), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
