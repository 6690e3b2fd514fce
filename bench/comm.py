#!/usr/bin/env python3
"""rill.distributed vs plain MPI (mpi4py) and PyTorch DDP over Gloo, in one MPI job.

    python3 -m rill.distributed.run --nproc 2 bench/comm.py              # all_reduce table: 4 B, 1/16/64 MiB
    python3 -m rill.distributed.run --nproc 2 bench/comm.py --sizes 4 256K 4M --repeats 11
    python3 -m rill.distributed.run --nproc 2 bench/comm.py --ddp        # DDP step: rill vs torch+gloo
    python3 -m rill.distributed.run --nproc 2 bench/comm.py --ddp --model big mlp256   # 784-1024-1024-10 too
    python3 -m rill.distributed.run --nproc 2 bench/comm.py --quick      # smoke test (few repeats, short loops)
    python3 -m rill.distributed.run --nproc 2 bench/comm.py --only-reference [--ddp]   # mpi4py / torch only

Without rill.distributed.run, the same under mpirun:

    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \\
        mpirun -n 2 --oversubscribe --bind-to none python3 bench/comm.py [args]

all_reduce (default): for each size, float32 buffers, alternating `--repeats` times: (a) rill, a loop of K
`dist.all_reduce(t)` then one `rill.synchronize()`, time per call; (b) mpi4py, K
`comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)` on a numpy buffer of the same size. The same K for both (200
up to 1 MiB, 20 up to 16 MiB, 10 above). Each timed loop follows an untimed warm-up and a barrier. Sizes up to
4 KiB also get a latency row: every iteration waits for the result (`dist.all_reduce(t); t.item()` against
Allreduce + reading buf[0]). Every timing is the max over ranks (so ranks agree, and the slowest rank is what a
collective costs); the table gives the median over repeats, rill/MPI (time ratio: lower is better), rill - MPI
in us, and the bus bandwidth 2(n-1)/n * bytes / time of the MPI column.

--ddp: one training step of an MLP (ReLU between layers; default 64-256-256-10, `--model digits` is
examples/train_digits.py's 64-128-64-10, `--model big` is 784-1024-1024-10, or any dash-separated widths),
batch 32 per rank of random data (seeded per rank, the same data in both frameworks), cross-entropy, SGD
lr 0.01: zero_grad, forward, loss, backward, step, loss.item(). rill.nn.parallel.DistributedDataParallel over
rill.distributed's MPI against torch.nn.parallel.DistributedDataParallel over Gloo (TCP on --master-addr),
phases alternating `--repeats` times, each phase a fresh model (the same initial weights in both) wrapped
afresh, `--warmup` untimed steps then `--steps` timed ones. Median step time (per rank, then the max over
ranks) and the mean over the timed loop (which includes draining rill's queue at the end). Both runs start
from the same weights and see the same batches, so their final losses must agree: a check that rill's DDP
averages gradients as torch's does.

Both frameworks use the same intra-op thread count, cores // ranks on this node (--threads overrides); rill's
VM threads are its design and count as its own. mpi4py is imported first, so it initialises MPI (thread level
MULTIPLE) and rill.distributed reuses it; rill's queue is drained (rill.synchronize()) before any mpi4py call,
so rill's and mpi4py's MPI calls never overlap.
"""
from mpi4py import MPI  # first: mpi4py initialises MPI and rill.distributed reuses it

import argparse
import importlib
import os
import socket
import statistics
import sys
import time
import traceback

import numpy as np

comm = MPI.COMM_WORLD
RANK = comm.Get_rank()
WORLD = comm.Get_size()

rill = dist = None  # imported in main() unless --only-reference (rill may not be built)
torch = None  # imported for --ddp


def log(*a, **kw):
    if RANK == 0:
        print(*a, **kw, flush=True)


def local_size():
    """Ranks on this node: Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, else a shared-memory split of the world."""
    env = os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    if env:
        return int(env)
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    n = node.Get_size()
    node.Free()
    return n


def rill_sync():
    if rill is not None:
        rill.synchronize()


def max_over_ranks(x):
    """The max of a Python float over ranks (mpi4py; rill's queue must be drained)."""
    return comm.allreduce(x, op=MPI.MAX)


def barrier():
    rill_sync()
    comm.Barrier()


# --- all_reduce -----------------------------------------------------------------------------------------

def parse_size(s):
    """'4', '4B', '256K', '1M', '16MiB', '1G' -> bytes."""
    t = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def fmt_size(nbytes):
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= m and nbytes % m == 0:
            return f"{nbytes // m} {unit}"
    return f"{nbytes} B"


def calls_for(nbytes):
    """K: all_reduce calls per timing (the same for rill and MPI)."""
    return 200 if nbytes <= 1 << 20 else 20 if nbytes <= 16 << 20 else 10


def time_loop(fn, calls, warmup):
    """Seconds per call of fn() over `calls` calls (max over ranks), after `warmup` untimed calls and a barrier.
    fn is a whole-loop function fn(n) that runs n iterations and ends at a sync point."""
    fn(warmup)
    barrier()
    t0 = time.perf_counter()
    fn(calls)
    dt = (time.perf_counter() - t0) / calls
    rill_sync()
    return max_over_ranks(dt)


def allreduce_fns(n):
    """kind -> loop(k) for a float32 buffer of n elements; each loop ends with its result waited for."""
    buf = np.zeros(n, np.float32)  # zeros: SUM keeps them zero (no overflow, no denormals)

    def mpi_loop(k):
        for _ in range(k):
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

    def mpi_latency(k):
        for _ in range(k):
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            float(buf[0])

    fns = {"mpi": mpi_loop, "mpi latency": mpi_latency}
    if rill is not None:
        t = rill.zeros(n)

        def rill_loop(k):
            for _ in range(k):
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
            rill.synchronize()

        def rill_latency(k):
            for _ in range(k):
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
                t.item() if n == 1 else t[0].item()

        fns.update({"rill": rill_loop, "rill latency": rill_latency})
    return fns


def check_allreduce(n):
    """One SUM all_reduce of rank+1 in each framework: every element must be 1 + 2 + ... + world."""
    want = WORLD * (WORLD + 1) / 2
    buf = np.full(n, RANK + 1, np.float32)
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    bad = [] if np.all(buf == want) else [f"mpi4py: {buf[:4]}"]
    if rill is not None:
        t = rill.tensor(np.full(n, RANK + 1, np.float32))
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        got = t.numpy()
        if not np.all(got == want):
            bad.append(f"rill: {got[:4]}")
    rill_sync()
    if comm.allreduce(len(bad), op=MPI.SUM):
        raise RuntimeError(f"rank {RANK}: all_reduce of {n} elements gave {bad or 'ok here'}, want {want}")


def run_allreduce(args):
    sizes = [parse_size(s) for s in args.sizes]
    repeats = args.repeats or (2 if args.quick else 7)
    log(f"{'all_reduce float32 SUM':24s} {'K':>4s} {'rill (us)':>10s} {'MPI (us)':>10s} {'rill/MPI':>8s} "
        f"{'rill-MPI us':>11s} {'MPI busbw GB/s':>14s}")
    for nbytes in sizes:
        n = max(1, nbytes // 4)
        check_allreduce(n)
        calls = args.calls or calls_for(4 * n)
        if args.quick:
            calls = max(2, calls // 10)
        warmup = max(1, calls // 10)
        fns = allreduce_fns(n)
        rows = [("", ("rill", "mpi"))]
        if 4 * n <= 4096:
            rows.append((" + wait (latency)", ("rill latency", "mpi latency")))
        for suffix, kinds in rows:
            times = {k: [] for k in kinds}
            for _ in range(repeats):
                for k in kinds:  # alternate, so drift hits both
                    if k in fns:
                        times[k].append(time_loop(fns[k], calls, warmup))
            r = statistics.median(times[kinds[0]]) if times[kinds[0]] else None
            m = statistics.median(times[kinds[1]])
            busbw = 2 * (WORLD - 1) / WORLD * 4 * n / m / 1e9
            name = fmt_size(4 * n) + suffix
            if r is None:
                log(f"{name:24s} {calls:4d} {'-':>10s} {m * 1e6:10.2f} {'-':>8s} {'-':>11s} {busbw:14.3f}")
            else:
                log(f"{name:24s} {calls:4d} {r * 1e6:10.2f} {m * 1e6:10.2f} {r / m:8.2f} {(r - m) * 1e6:11.2f} "
                    f"{busbw:14.3f}")
        del fns


# --- DDP ------------------------------------------------------------------------------------------------

MODELS = {"digits": [64, 128, 64, 10], "mlp256": [64, 256, 256, 10], "big": [784, 1024, 1024, 10]}


def widths_of(name):
    if name in MODELS:
        return MODELS[name]
    try:
        w = [int(x) for x in name.split("-")]
    except ValueError:
        w = []
    if len(w) < 2:
        raise SystemExit(f"--model: {name!r} is neither one of {sorted(MODELS)} nor dash-separated widths")
    return w


def build_mlp(lib, widths):
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        if i:
            layers.append(lib.nn.ReLU())
        layers.append(lib.nn.Linear(a, b))
    return lib.nn.Sequential(*layers)


def free_port(addr):
    """A port free on addr now, picked by rank 0 and broadcast (mpi4py)."""
    port = None
    if RANK == 0:
        with socket.socket() as s:
            s.bind((addr, 0))
            port = s.getsockname()[1]
    return comm.bcast(port, root=0)


def ddp_phase(lib, widths, init_state, x_np, y_np, args, steps, warmup):
    """One phase: a fresh model with init_state, DDP-wrapped, SGD; per-step times of `steps` steps after
    `warmup`. Returns (median step s, mean step s over the loop, final loss), the times maxed over ranks."""
    model = build_mlp(lib, widths)
    model.load_state_dict({k: lib.tensor(v.copy()) for k, v in init_state.items()})
    kw = {} if args.bucket_cap_mb is None else {"bucket_cap_mb": args.bucket_cap_mb}
    ddp = lib.nn.parallel.DistributedDataParallel(model, **kw)
    opt = lib.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = lib.nn.CrossEntropyLoss()
    x, y = lib.tensor(x_np), lib.tensor(y_np)

    def step():
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(warmup):
        step()
    barrier()
    per_step = []
    t_loop = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        per_step.append(time.perf_counter() - t0)
    if lib is rill:
        rill.synchronize()
    mean = (time.perf_counter() - t_loop) / steps
    del ddp, opt, model
    rill_sync()
    return max_over_ranks(statistics.median(per_step)), max_over_ranks(mean), loss


def run_ddp(args, threads):
    tdist = importlib.import_module("torch.distributed")
    importlib.import_module("torch.nn.parallel")  # torch.nn.parallel.DistributedDataParallel
    if rill is not None:
        importlib.import_module("rill.nn.parallel")
    port = args.port or free_port(args.master_addr)
    tdist.init_process_group("gloo", rank=RANK, world_size=WORLD, init_method=f"tcp://{args.master_addr}:{port}")
    rounds = args.repeats or (1 if args.quick else 3)
    steps = args.steps or (20 if args.quick else 200)
    warmup = args.warmup if args.warmup is not None else (5 if args.quick else 20)
    libs = {"torch": torch} if rill is None else {"rill": rill, "torch": torch}
    log(f"DDP train step: batch {args.batch}/rank, SGD lr 0.01, cross-entropy, {WORLD} ranks, {threads} intra-op "
        f"thread(s)/rank, {rounds} round(s) of {warmup} + {steps} steps; torch over Gloo (tcp "
        f"{args.master_addr}:{port}), rill over MPI")
    log(f"{'model':28s} {'params':>9s} {'rill (ms)':>10s} {'torch (ms)':>10s} {'rill/torch':>10s} "
        f"{'rill mean':>9s} {'torch mean':>10s} {'|loss diff|':>11s}")
    try:
        for name in args.model:
            widths = widths_of(name)
            torch.manual_seed(args.seed)  # the same initial weights on every rank and in both frameworks
            init_state = {k: v.detach().numpy().copy() for k, v in build_mlp(torch, widths).state_dict().items()}
            nparams = sum(v.size for v in init_state.values())
            rng = np.random.default_rng([args.seed, RANK])  # each rank its own batch, as in data-parallel training
            x_np = rng.standard_normal((args.batch, widths[0]), dtype=np.float32)
            y_np = rng.integers(0, widths[-1], args.batch)
            med = {k: [] for k in libs}
            mean = {k: [] for k in libs}
            losses = {}
            for _ in range(rounds):
                for k in ("torch", "rill"):  # alternate, so drift hits both
                    if k in libs:
                        m, a, losses[k] = ddp_phase(libs[k], widths, init_state, x_np, y_np, args, steps, warmup)
                        med[k].append(m)
                        mean[k].append(a)
            t_med, t_mean = statistics.median(med["torch"]), statistics.median(mean["torch"])
            label = f"MLP {'-'.join(map(str, widths))} b{args.batch}"
            if rill is None:
                log(f"{label:28s} {nparams:9d} {'-':>10s} {t_med * 1e3:10.3f} {'-':>10s} {'-':>9s} "
                    f"{t_mean * 1e3:10.3f} {'-':>11s}")
                continue
            r_med, r_mean = statistics.median(med["rill"]), statistics.median(mean["rill"])
            diff = max_over_ranks(abs(losses["rill"] - losses["torch"]))
            log(f"{label:28s} {nparams:9d} {r_med * 1e3:10.3f} {t_med * 1e3:10.3f} {r_med / t_med:10.2f} "
                f"{r_mean * 1e3:9.3f} {t_mean * 1e3:10.3f} {diff:11.2e}")
            agree = diff <= 1e-3 * max(1.0, abs(losses["torch"]))
            log(f"{'':28s} final loss on rank 0: rill {losses['rill']:.6f}, torch {losses['torch']:.6f}"
                + ("" if agree else "  <- DISAGREE: rill's DDP does not average gradients as torch's does"))
    finally:
        tdist.destroy_process_group()


# --- main -----------------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ddp", action="store_true", help="time DDP training steps instead of all_reduce")
    p.add_argument("--sizes", nargs="+", default=["4", "1M", "16M", "64M"],
                   help="all_reduce buffer sizes in bytes (K/M/G suffixes, binary); float32, at least 1 element")
    p.add_argument("--calls", type=int, default=None, help="all_reduce calls per timing (default: by size)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timings per size (default 7) / DDP rounds per framework (default 3)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 repeats, K/10 calls; DDP 1 round, 5+20 steps")
    p.add_argument("--only-reference", action="store_true",
                   help="skip rill: only the mpi4py and torch+gloo columns (works without rill built)")
    p.add_argument("--model", nargs="+", default=["mlp256"],
                   help=f"DDP MLPs: {', '.join(f'{k} ({chr(45).join(map(str, v))})' for k, v in MODELS.items())} "
                        "or dash-separated widths")
    p.add_argument("--batch", type=int, default=32, help="DDP batch per rank")
    p.add_argument("--steps", type=int, default=None, help="DDP timed steps per phase (default 200)")
    p.add_argument("--warmup", type=int, default=None, help="DDP untimed steps per phase (default 20)")
    p.add_argument("--bucket-cap-mb", type=float, default=None, help="passed to both DDPs (default: theirs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1", help="Gloo's rendezvous address (rank 0's host)")
    p.add_argument("--port", type=int, default=None, help="Gloo's rendezvous port (default: a free one)")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads per rank, both frameworks (default: cores // ranks on this node)")
    return p.parse_args(argv)


def main(argv=None):
    global rill, dist, torch
    args = parse_args(argv)
    for name in args.model:
        widths_of(name)  # a bad --model fails here, before any setup
    nlocal = local_size()
    threads = args.threads or max(1, len(os.sched_getaffinity(0)) // nlocal)
    if not args.only_reference:
        import rill as _rill
        import rill.distributed as _dist
        rill, dist = _rill, _dist
        if hasattr(rill, "set_num_threads"):
            rill.set_num_threads(threads)
        dist.init_process_group("mpi")
        if (dist.get_rank(), dist.get_world_size()) != (RANK, WORLD):
            raise RuntimeError(f"rill.distributed rank/size {dist.get_rank()}/{dist.get_world_size()} != "
                               f"MPI's {RANK}/{WORLD}")
    if args.ddp:
        import torch as _torch
        torch = _torch
        torch.set_num_threads(threads)
    level = {MPI.THREAD_SINGLE: "SINGLE", MPI.THREAD_FUNNELED: "FUNNELED", MPI.THREAD_SERIALIZED: "SERIALIZED",
             MPI.THREAD_MULTIPLE: "MULTIPLE"}.get(MPI.Query_thread(), "?")
    log(f"{MPI.Get_library_version().splitlines()[0].strip()}; mpi4py {sys.modules['mpi4py'].__version__}, "
        f"thread level {level}; {WORLD} ranks ({nlocal} on this node), {threads} intra-op thread(s) per rank"
        + ("; rill skipped (--only-reference)" if rill is None else ""))
    try:
        if args.ddp:
            run_ddp(args, threads)
        else:
            run_allreduce(args)
    finally:
        if rill is not None:
            rill.synchronize()
            dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:
        # One rank failing would leave the others waiting in a collective: report, then end the whole job.
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
