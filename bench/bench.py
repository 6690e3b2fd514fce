"""rill vs PyTorch, side by side in one process (docs/architecture.md §8).

Each workload runs in both frameworks, alternating, for several repeats; we
report the median time per op (or per iteration) and rill/torch (time ratio:
lower is better; throughput relative to PyTorch is its inverse). Both
frameworks use the same intra-op thread count, once per value of --threads.
Every timed call ends with a sync, so rill's asynchronous VM is measured with
its work finished. Each timing is settled first (run.py, SETTLE_S).

    python3 bench/bench.py                      # all workloads, 1 and 2 threads
    python3 bench/bench.py --only matmul        # workloads whose name contains 'matmul'
    python3 bench/bench.py --compute-on-worker 0 1   # the VM knob, both values
    python3 bench/bench.py --only float16            # the float16 / bfloat16 workloads
    python3 bench/bench.py --threads 1 --background 2   # with 2 CPU-bound processes beside the suite
"""
import argparse
import statistics

import numpy as np
import torch

import rill
from run import (_sync, _time, chain_64, item_1k, scalar_loop, start_background, stop_background,  # bench/run.py
                 tiny_mlp)


def workloads():
    """name -> (setup(lib) -> fn, calls per timing, ops per call). fn ends with its own sync."""
    def item_loop(lib):
        def run():
            x = lib.zeros(1)
            for _ in range(100):
                x = x + 1
                x.item()
        return run

    def add_item_loop(lib):
        def run():
            x = lib.zeros(1)
            for _ in range(100):
                x.add_(1)
                x.item()
        return run

    def add_item_loop_async(lib):
        # The same loop with rill's ops on a rill.asyncs thread's worker (torch runs it as before): each item()
        # waits on work queued for a VM worker thread.
        if lib is not rill:
            return add_item_loop(lib)
        t = rill.asyncs.Thread()
        loop = add_item_loop(lib)

        def run():
            with rill.asyncs.thread(t):
                loop()
        return run

    def add_1m(lib):
        a = lib.tensor(np.random.rand(1 << 20).astype(np.float32))
        b = lib.tensor(np.random.rand(1 << 20).astype(np.float32))

        def run():
            a + b
            _sync(lib)
        return run

    def sum_1m(lib):
        a = lib.tensor(np.random.rand(1 << 20).astype(np.float32))

        def run():
            a.sum()
            _sync(lib)
        return run

    def unary_1m(fn):
        """fn(lib, x) on 1M float32 (the op library's vectorised elementwise and reduction kernels)."""
        def setup(lib):
            a = lib.tensor(np.random.randn(1 << 20).astype(np.float32))

            def run():
                fn(lib, a)
                _sync(lib)
            return run
        return setup

    def functional(lib):
        return lib.nn.functional

    def matmul_1024(lib, dtype="float32"):
        a = lib.tensor(np.random.rand(1024, 1024).astype(np.float32)).to(getattr(lib, dtype))
        b = lib.tensor(np.random.rand(1024, 1024).astype(np.float32)).to(getattr(lib, dtype))

        def run():
            a @ b
            _sync(lib)
        return run

    def elementwise_1m(fn, dtype):
        """fn(a, b) on two 1M tensors of dtype (the 16-bit workloads)."""
        def setup(lib):
            a = lib.tensor(np.random.rand(1 << 20).astype(np.float32)).to(getattr(lib, dtype))
            b = lib.tensor(np.random.rand(1 << 20).astype(np.float32)).to(getattr(lib, dtype))

            def run():
                fn(a, b)
                _sync(lib)
            return run
        return setup

    def conv2d_train(channels):
        # One training step of a 3x3 convolution (padding 1) on a 32x3x32x32 batch: rill runs
        # its forward and backward ops (input, weight, bias) directly, torch runs autograd.
        def setup(lib):
            x = np.random.rand(32, 3, 32, 32).astype(np.float32)
            w = np.random.rand(channels, 3, 3, 3).astype(np.float32)
            b = np.random.rand(channels).astype(np.float32)
            gy = np.random.rand(32, channels, 32, 32).astype(np.float32)
            if lib is rill:
                rx, rw, rb, rgy = (rill.tensor(a) for a in (x, w, b, gy))

                def run():
                    rill.nn.functional.conv2d(rx, rw, rb, padding=1)
                    rill._C._conv2d_backward_input(rgy, rw, (32, 3, 32, 32), 1, 1, 1, 1)
                    rill._C._conv2d_backward_weight(rgy, rx, (channels, 3, 3, 3), 1, 1, 1, 1)
                    rill._C._conv_backward_bias(rgy)
                    rill.synchronize()
                return run
            tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
            tgy = torch.tensor(gy)

            def run():
                torch.nn.functional.conv2d(tx, tw, tb, padding=1).backward(tgy)
            return run
        return setup
    def fwd_bwd(fn, shape, backward=True):
        # fn(F, x) on a float32 tensor of shape through autograd in both frameworks, then (with backward)
        # the gradient of a fixed grad_output; x.grad is reset each call so no accumulation is timed.
        def setup(lib):
            F = lib.nn.functional
            rng = np.random.default_rng(2)
            x = lib.tensor(rng.standard_normal(shape).astype(np.float32)).requires_grad_(backward)
            gy = lib.tensor(rng.standard_normal(tuple(fn(torch.nn.functional, torch.zeros(shape)).shape))
                            .astype(np.float32))

            def run():
                x.grad = None
                y = fn(F, x)
                if backward:
                    y.backward(gy)
                _sync(lib)
            return run
        return setup

    def norm_mlp(lib):
        # layer_norm + gelu + linear on 64x512, forward and backward.
        F = lib.nn.functional
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.standard_normal((64, 512)).astype(np.float32)).requires_grad_()
        g = lib.tensor(rng.standard_normal(512).astype(np.float32)).requires_grad_()
        b = lib.tensor(rng.standard_normal(512).astype(np.float32)).requires_grad_()
        w = lib.tensor((rng.standard_normal((512, 512)) * 0.04).astype(np.float32)).requires_grad_()
        wb = lib.tensor(rng.standard_normal(512).astype(np.float32)).requires_grad_()

        def run():
            y = F.linear(F.gelu(F.layer_norm(x, (512,), g, b)), w, wb)
            y.sum().backward()
            _sync(lib)
        return run

    def attention(lib):
        # scaled_dot_product_attention on 8x4x128x64, forward and backward.
        F = lib.nn.functional
        rng = np.random.default_rng(1)
        q, k, v = (lib.tensor(rng.standard_normal((8, 4, 128, 64)).astype(np.float32)).requires_grad_()
                   for _ in range(3))

        def run():
            F.scaled_dot_product_attention(q, k, v).sum().backward()
            _sync(lib)
        return run

    return {
        "x = x + y, 1 elem, 20k ops (per op)": (scalar_loop, 1, 20000),
        "30-op chain on 64x64 (per op)": (chain_64, 20, 30),
        "(v * 2).sum().item(), 1k elems": (item_1k, 2000, 1),
        "x = x + 1; x.item() loop (per iter)": (item_loop, 20, 100),
        "x.add_(1); x.item() loop (per iter)": (add_item_loop, 20, 100),
        "x.add_(1); x.item() asyncs (per iter)": (add_item_loop_async, 20, 100),
        "tiny MLP 32-32-32-1 b8 train step": (tiny_mlp, 200, 1),
        "add, 1M float32": (add_1m, 100, 1),
        "sum, 1M float32": (sum_1m, 100, 1),
        "matmul 1024x1024 float32": (matmul_1024, 5, 1),
        "matmul 1024x1024 bfloat16": (lambda lib: matmul_1024(lib, "bfloat16"), 5, 1),   # matmul_bf16_1024
        "add, 1M bfloat16": (elementwise_1m(lambda a, b: a + b, "bfloat16"), 100, 1),    # add_bf16_1M
        "sum, 1M bfloat16": (elementwise_1m(lambda a, b: a.sum(), "bfloat16"), 100, 1),
        "add, 1M float16": (elementwise_1m(lambda a, b: a + b, "float16"), 100, 1),
        "conv2d fwd+bwd 32x3x32x32 -> 16ch": (conv2d_train(16), 10, 1),
        "conv2d fwd+bwd 32x3x32x32 -> 32ch": (conv2d_train(32), 10, 1),
        "max_pool2d fwd+bwd 32x16x32x32 k2s2": (fwd_bwd(lambda F, x: F.max_pool2d(x, 2), (32, 16, 32, 32)), 20, 1),
        "max_pool2d fwd 32x16x32x32 k2s2": (fwd_bwd(lambda F, x: F.max_pool2d(x, 2), (32, 16, 32, 32), False),
                                            20, 1),
        "max_pool2d fwd+bwd 32x16x32x32 k3s2p1": (fwd_bwd(lambda F, x: F.max_pool2d(x, 3, 2, 1),
                                                             (32, 16, 32, 32)), 20, 1),
        "avg_pool2d fwd+bwd 32x16x32x32 k2s2": (fwd_bwd(lambda F, x: F.avg_pool2d(x, 2), (32, 16, 32, 32)), 20, 1),
        "avg_pool2d fwd+bwd 32x16x32x32 k3s2p1": (fwd_bwd(lambda F, x: F.avg_pool2d(x, 3, 2, 1),
                                                             (32, 16, 32, 32)), 20, 1),
        "adaptive_avg_pool2d fwd+bwd 32x16x32x32->4": (fwd_bwd(lambda F, x: F.adaptive_avg_pool2d(x, 4),
                                                                  (32, 16, 32, 32)), 20, 1),
        "adaptive_avg_pool2d fwd+bwd 32x64x8x8->1": (fwd_bwd(lambda F, x: F.adaptive_avg_pool2d(x, 1),
                                                                (32, 64, 8, 8)), 20, 1),
        "gelu, 1M float32": (unary_1m(lambda lib, a: functional(lib).gelu(a)), 50, 1),
        "gelu fwd+bwd, 1M float32": (fwd_bwd(lambda F, x: F.gelu(x), (1 << 20,)), 20, 1),
        "gelu tanh, 1M float32": (unary_1m(lambda lib, a: functional(lib).gelu(a, approximate="tanh")), 50, 1),
        "softplus, 1M float32": (unary_1m(lambda lib, a: functional(lib).softplus(a)), 50, 1),
        "var, 1M float32": (unary_1m(lambda lib, a: a.var()), 50, 1),
        "layer_norm+gelu+linear 64x512 fwd+bwd": (norm_mlp, 50, 1),
        "sdpa 8x4x128x64 fwd+bwd": (attention, 10, 1),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--compute-on-worker", type=int, nargs="+", default=[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", default=None, help="substring of the workload names to run")
    p.add_argument("--online-us", type=int, nargs="+", default=[None],
                   help="values of RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS to compare (default: the knob's)")
    p.add_argument("--background", type=int, default=0,
                   help="CPU-bound busy-loop processes to run beside the suite (killed at the end)")
    args = p.parse_args()
    background = start_background(args.background)
    try:
        run_suite(args)
    finally:
        stop_background(background)


def run_suite(args):
    libs = {"rill": rill, "torch": torch}
    print(f"{'workload':38s} {'thr':>3s} {'cow':>3s} {'onl':>4s} {'rill (us)':>10s} {'torch (us)':>10s} "
          f"{'rill/torch':>10s}")
    for online in args.online_us:
        rill.set_env_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", None if online is None else str(online))
        online_label = "dflt" if online is None else str(online)
        for cow in args.compute_on_worker:
            rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", str(cow))
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
                            times[k].append(_time(fns[k], calls) / ops_per_call)
                    r = statistics.median(times["rill"])
                    t = statistics.median(times["torch"])
                    print(f"{name:38s} {threads:3d} {cow:3d} {online_label:>4s} {r * 1e6:10.2f} {t * 1e6:10.2f} "
                          f"{r / t:10.2f}", flush=True)
    rill.set_env_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", None)
    rill.set_env_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", None)

if __name__ == "__main__":
    main()
