"""One rank of tests/python/test_distributed.py: `python -m rill.distributed.run --nproc N distributed_worker.py
CASE...` runs each case on every rank and prints "PASS <case> rank <r>"; a failed check raises, which ends
the job (rill.distributed aborts it) with a non-zero status."""
import os
import sys

import numpy as np

import rill
import rill.distributed as dist
import rill.nn as nn

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]


def values(rank, dtype, shape=(2, 3)):
    """This rank's values as a float64 numpy array (1s and 2s, or a bool pattern: no overflow anywhere)."""
    i = np.arange(int(np.prod(shape))).reshape(shape)
    if dtype == "bool":
        return ((i + rank) % 3 == 0).astype(np.float64)
    return 1.0 + (i + rank) % 2


def as_rill(a, dtype):
    return rill.tensor(a).to(getattr(rill, dtype))


def to_numpy(t):
    return t.to(rill.float64).numpy()


def expected(op, dtype, world, shape=(2, 3)):
    return _reduce_np(op, dtype, np.stack([values(r, dtype, shape) for r in range(world)]), world)


def supported(op, dtype):
    floating = dtype.startswith(("float", "bfloat"))
    if op in ("BAND", "BOR", "BXOR") and floating:
        return False
    return not (op == "AVG" and dtype == "bool")


def check(got, want, dtype, what):
    tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-6
    if not np.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f"{what} on rank {dist.get_rank()}: got {got.tolist()}, want {want.tolist()}")


def case_collectives():
    r, n = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        for op in OPS:
            if not supported(op, dtype):
                continue
            t = as_rill(values(r, dtype), dtype)
            dist.all_reduce(t, op=dist.ReduceOp[op])
            check(to_numpy(t), expected(op, dtype, n), dtype, f"all_reduce {op} {dtype}")
            # not dense: a transposed view, reduced in place through a dense copy
            nd = as_rill(values(r, dtype, (2, 3)), dtype).t()
            assert not nd.is_contiguous()
            dist.all_reduce(nd, op=dist.ReduceOp[op])
            check(to_numpy(nd), expected(op, dtype, n).T, dtype, f"all_reduce {op} {dtype} (transposed)")
            # reduce to the last rank; the others keep their values
            dst = n - 1
            t = as_rill(values(r, dtype), dtype)
            dist.reduce(t, dst=dst, op=dist.ReduceOp[op])
            check(to_numpy(t), expected(op, dtype, n) if r == dst else values(r, dtype), dtype, f"reduce {op} {dtype}")
            # reduce_scatter_tensor: rank r gets rows [2r, 2r + 2) of the reduction of a (2n, 3) input
            full = np.concatenate([values(r, dtype) for _ in range(n)]) if dtype == "bool" else \
                np.concatenate([values(r + k, dtype) for k in range(n)])
            out = as_rill(np.zeros((2, 3)), dtype)
            dist.reduce_scatter_tensor(out, as_rill(full, dtype), op=dist.ReduceOp[op])
            stack = [np.concatenate([values(q, dtype) for _ in range(n)]) if dtype == "bool" else
                     np.concatenate([values(q + k, dtype) for k in range(n)]) for q in range(n)]
            want = _reduce_np(op, dtype, np.stack(stack), n)[2 * r:2 * r + 2]
            check(to_numpy(out), want, dtype, f"reduce_scatter_tensor {op} {dtype}")
        # broadcast from the last rank, into a non-dense view too
        t = as_rill(values(r, dtype), dtype)
        dist.broadcast(t, src=n - 1)
        check(to_numpy(t), values(n - 1, dtype), dtype, f"broadcast {dtype}")
        v = as_rill(values(r, dtype), dtype).t()
        dist.broadcast(v, src=0)
        check(to_numpy(v), values(0, dtype).T, dtype, f"broadcast {dtype} (transposed)")
        # gathers
        mine = as_rill(values(r, dtype), dtype)
        outs = [as_rill(np.zeros((2, 3)), dtype) for _ in range(n)]
        dist.all_gather(outs, mine.t().contiguous().t())
        for q in range(n):
            check(to_numpy(outs[q]), values(q, dtype), dtype, f"all_gather {dtype} [{q}]")
        big = as_rill(np.zeros((2 * n, 3)), dtype)
        dist.all_gather_into_tensor(big, mine)
        check(to_numpy(big), np.concatenate([values(q, dtype) for q in range(n)]), dtype,
              f"all_gather_into_tensor {dtype}")


def _reduce_np(op, dtype, stack, world):
    if dtype == "bool":
        b = stack.astype(bool)
        return {"SUM": b.any(0), "MAX": b.any(0), "BOR": b.any(0), "PRODUCT": b.all(0), "MIN": b.all(0),
                "BAND": b.all(0), "BXOR": np.logical_xor.reduce(b, 0)}[op].astype(np.float64)
    if op in ("BAND", "BOR", "BXOR"):
        f = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op]
        return f.reduce(stack.astype(np.int64), 0).astype(np.float64)
    out = {"SUM": stack.sum(0), "PRODUCT": stack.prod(0), "MIN": stack.min(0), "MAX": stack.max(0),
           "AVG": stack.sum(0) / world}[op]
    return np.floor(out) if op == "AVG" and not dtype.startswith(("float", "bfloat")) else out


def case_p2p():
    r, n = dist.get_rank(), dist.get_world_size()
    right, left = (r + 1) % n, (r - 1) % n
    # a ring: every rank posts its receive, then its send (both nonblocking), then waits
    got = rill.zeros(4)
    recv = dist.irecv(got, src=left)
    send = dist.isend(rill.full((4,), float(r)), dst=right)
    send.wait()
    recv.wait()
    assert recv.is_completed() and send.is_completed()
    assert got.tolist() == [float(left)] * 4, got.tolist()
    # blocking send/recv with a tag, and a receive from any rank (recv returns the sender's rank)
    if r == 0:
        senders = set()
        for _ in range(n - 1):
            buf = rill.zeros(2, dtype=rill.int64)
            senders.add(dist.recv(buf, tag=7))
            assert buf.tolist() == [10, 10], buf.tolist()
        assert senders == set(range(1, n)), senders
    else:
        dist.send(rill.full((2,), 10, dtype=rill.int64), dst=0, tag=7)
    # every dtype, into a non-dense view
    for dtype in DTYPES:
        if r == 0:
            dist.send(as_rill(values(0, dtype), dtype), dst=n - 1)
        elif r == n - 1:
            into = as_rill(np.zeros((3, 2)), dtype).t()
            dist.recv(into, src=0)
            check(to_numpy(into), values(0, dtype), dtype, f"recv {dtype}")
    # the op that reads a received tensor waits for it (ordered like any op)
    if r == 0:
        dist.send(rill.arange(5.0), dst=n - 1)
    elif r == n - 1:
        x = rill.zeros(5)
        dist.irecv(x, src=0)
        assert (x * 2).sum().item() == 20.0
    # a rank cannot send to itself
    try:
        dist.send(rill.zeros(1), dst=r)
    except ValueError as e:
        assert "own rank" in str(e)
    else:
        raise AssertionError("send to self did not raise")
    dist.barrier()


def case_groups():
    r, n = dist.get_rank(), dist.get_world_size()
    evens = [q for q in range(n) if q % 2 == 0]
    g = dist.new_group(evens)
    assert dist.get_world_size(g) == (len(evens) if r in evens else -1)
    assert dist.get_rank(g) == (evens.index(r) if r in evens else -1)
    t = rill.full((3,), float(r + 1))
    if r in evens:
        dist.all_reduce(t, group=g)
        assert t.tolist() == [float(sum(q + 1 for q in evens))] * 3, t.tolist()
        b = rill.full((2,), float(r))
        dist.broadcast(b, src=evens[-1], group=g)
        assert b.tolist() == [float(evens[-1])] * 2
        dist.barrier(group=g)
    else:
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert dist.all_reduce(t, group=g) is None
        assert w and "does not belong" in str(w[0].message)
        assert t.tolist() == [float(r + 1)] * 3
    # the world goes on after a subgroup's collectives
    s = rill.ones(1)
    dist.all_reduce(s)
    assert s.item() == n
    dist.destroy_process_group(g)
    # Python objects
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "name": "x" * (r + 1)})
    assert objs == [{"rank": q, "name": "x" * (q + 1)} for q in range(n)], objs
    lst = [r, "hello"] if r == 1 else [None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [1, "hello"], lst


def case_async():
    r, n = dist.get_rank(), dist.get_world_size()
    t = rill.ones(1000) * (r + 1)
    w = dist.all_reduce(t, async_op=True)
    assert w.wait() is True and w.is_completed()
    assert t[0].item() == n * (n + 1) / 2
    # ordering: ops queued before the collective are reduced, ops after see the result
    x = rill.zeros(10)
    x += r + 1
    dist.all_reduce(x)
    y = x * 2
    assert y.sum().item() == 10 * 2 * n * (n + 1) / 2
    assert dist.barrier(async_op=True).wait()


def case_errors():
    # bad input raises at the call, naming what to do
    for call, kind, text in [
        (lambda: dist.all_reduce([1, 2]), TypeError, "rill.Tensor"),
        (lambda: dist.all_reduce(rill.ones(2), op=99), ValueError, "ReduceOp"),
        (lambda: dist.broadcast(rill.ones(2), src=99), ValueError, "not a rank"),
        (lambda: dist.all_reduce(rill.ones(2), op=dist.ReduceOp.BAND), ValueError, "integer or bool"),
        (lambda: dist.init_process_group(), RuntimeError, "twice"),
        (lambda: dist.init_process_group("nccl"), RuntimeError, "not available"),
    ]:
        try:
            out = call()
            if out is None:
                rill.synchronize()  # a failure inside the comm stream shows at the next sync point
        except kind as e:
            assert text in str(e), (text, str(e))
        else:
            raise AssertionError(f"no {kind.__name__} containing {text!r}")
    # an error inside the comm stream (a message longer than the receive buffer) reaches the user at the next
    # sync point that touches what the operation wrote, and what was computed from it
    r = dist.get_rank()
    if r == 0:
        dist.send(rill.ones(8), dst=1)
    elif r == 1:
        buf = rill.zeros(4)
        dist.irecv(buf, src=0)
        y = buf * 2
        try:
            y.sum().item()
        except RuntimeError as e:
            assert "MPI_ERR_TRUNCATE" in str(e) and "comm_recv" in str(e), str(e)
            # named by the user's line that issued it, not by rill.distributed's own
            assert f"issued at {__file__}:" in str(e), str(e)
        else:
            raise AssertionError("a truncated receive raised nothing")
    dist.barrier()
    # the process group still works
    t = rill.ones(1)
    dist.all_reduce(t)
    assert t.item() == dist.get_world_size()


def _model():
    rill.manual_seed(3)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


def _data(steps, batch):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((steps, batch, 16)).astype(np.float32),
            rng.integers(0, 4, (steps, batch)).astype(np.int64))


def case_ddp():
    """20 SGD steps of DDP over n ranks with batch 32 each equal one process on batch 32 n (within 1e-5)."""
    r, n = dist.get_rank(), dist.get_world_size()
    b, steps = 32, 20
    xs, ys = _data(steps, b * n)
    ref = _model()
    opt = rill.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for i in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(ref(rill.tensor(xs[i])), rill.tensor(ys[i])).backward()
        opt.step()
    m = _model()
    if r == 1:  # another start: the broadcast from rank 0 makes the replicas equal
        with rill.no_grad():
            for p in m.parameters():
                p.add_(1.0)
    ddp = nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.002)  # several buckets
    assert len(ddp._buckets) > 2
    opt = rill.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for i in range(steps):
        opt.zero_grad()
        out = ddp(rill.tensor(xs[i, r * b:(r + 1) * b]))
        nn.functional.cross_entropy(out, rill.tensor(ys[i, r * b:(r + 1) * b])).backward()
        opt.step()
    diff = max(float((p - q).abs().max()) for p, q in zip(m.parameters(), ref.parameters()))
    assert diff < 1e-5, diff
    keys = list(ddp.state_dict())
    assert keys[0].startswith("module."), keys
    from rill.nn.modules.utils import consume_prefix_in_state_dict_if_present
    sd = ddp.state_dict()
    consume_prefix_in_state_dict_if_present(sd, "module.")
    _model().load_state_dict(sd)


def case_ddp_overlap():
    """The buckets are all-reduced while backward is still running: when the first bucket (the last layer's)
    is reduced, the first layer's gradients are not computed yet."""
    import rill.nn.parallel.distributed as ddp_module
    ddp = nn.parallel.DistributedDataParallel(_model(), bucket_cap_mb=0.002)
    first_layer = list(ddp.module.parameters())[:2]
    pending_at_call = []
    real = ddp_module.dist.all_reduce

    def recording(tensor, *args, **kwargs):
        pending_at_call.append(sum(p.grad is None for p in first_layer))
        return real(tensor, *args, **kwargs)

    ddp_module.dist.all_reduce = recording
    try:
        xs, ys = _data(1, 8)
        nn.functional.cross_entropy(ddp(rill.tensor(xs[0])), rill.tensor(ys[0])).backward()
    finally:
        ddp_module.dist.all_reduce = real
    assert len(pending_at_call) == len(ddp._buckets) > 2, pending_at_call
    assert pending_at_call[0] == 2 and pending_at_call[-1] == 0, pending_at_call
    assert all(p.grad is not None for p in ddp.module.parameters())


def case_ddp_no_sync():
    """Two micro-batches under no_sync, then one synced: the same as averaging the three micro-batches' summed
    gradients over the ranks."""
    r, n = dist.get_rank(), dist.get_world_size()
    xs, ys = _data(3, 8 * n)
    ref = _model()
    for i in range(3):
        nn.functional.cross_entropy(ref(rill.tensor(xs[i])), rill.tensor(ys[i])).backward()
    ddp = nn.parallel.DistributedDataParallel(_model())
    for i in range(3):
        ctx = ddp.no_sync() if i < 2 else _null()
        with ctx:
            out = ddp(rill.tensor(xs[i, r * 8:(r + 1) * 8]))
            nn.functional.cross_entropy(out, rill.tensor(ys[i, r * 8:(r + 1) * 8])).backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        diff = float((p.grad - q.grad).abs().max())
        assert diff < 1e-5, diff


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        rill.manual_seed(5)
        self.body = nn.Linear(8, 8)
        self.used = nn.Linear(8, 2)
        self.unused = nn.Linear(8, 2)

    def forward(self, x):
        return self.used(self.body(x).relu())


def case_ddp_unused():
    x = rill.randn(4, 8)
    ddp = nn.parallel.DistributedDataParallel(_TwoHeads(), find_unused_parameters=True, bucket_cap_mb=0.0001)
    for _ in range(2):
        ddp(x).sum().backward()
    grads = [p.grad.clone() for p in ddp.module.body.parameters()]
    for g in grads:  # the average over the ranks is what every rank holds
        mean = g.clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        assert float((mean - g).abs().max()) < 1e-6
    # without find_unused_parameters, the next forward says what is wrong
    plain = nn.parallel.DistributedDataParallel(_TwoHeads(), bucket_cap_mb=0.0001)
    plain(x).sum().backward()
    try:
        plain(x)
    except RuntimeError as e:
        assert "find_unused_parameters" in str(e) and "unused" in str(e)
    else:
        raise AssertionError("an unused parameter went unnoticed")


def case_fork():
    """A DataLoader worker (a fork after init_process_group) must not communicate: it raises, and the ranks'
    own collectives go on."""
    from rill.utils.data import DataLoader, Dataset

    class Touch(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            try:
                dist.all_reduce(rill.ones(1))
            except RuntimeError as e:
                return rill.tensor([1.0 if "forked" in str(e) else 0.0])
            return rill.tensor([0.0])

    seen = [b for b in DataLoader(Touch(), batch_size=1, num_workers=2)]
    assert all(b.item() == 1.0 for b in seen), [b.item() for b in seen]
    t = rill.ones(1)
    dist.all_reduce(t)
    assert t.item() == dist.get_world_size()


def run_cases(cases):
    """Run the cases sys.argv names (case_<name> in cases, a module's globals()), each followed by a barrier and
    PASS <name> rank <r>: what the launching test looks for."""
    dist.init_process_group("mpi")
    assert dist.get_world_size() == int(os.environ["OMPI_COMM_WORLD_SIZE"])
    for name in sys.argv[1:]:
        cases["case_" + name]()
        dist.barrier()
        print(f"PASS {name} rank {dist.get_rank()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    run_cases(globals())
