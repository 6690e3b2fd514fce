"""How nn.Graph's traced jobs become this rank's plan (Note [Separate compilation] in src/rill/graph/separate.cpp).

A job of this process, or a global job in a world of one rank, is compiled here. A global job over several ranks
is compiled as RILL_GRAPH_COMPILE_MODE says (read at each compile):

- ``separate`` (the default): the master (rank 0) runs the logical passes and the task table, and sends the
  logical job to every rank; each rank compiles its own part. A rank's compile time stays that of its plan.
- ``naive``: the master compiles every rank's part and sends each its job and plan; its time and bytes grow
  with the world. It stays as the reference, and for ``python -m rill.graph.compile_bench``.

Every rank still traces build() itself: the trace binds its variables. The master's bytes go by
rill.distributed.send; an error compiling on the master reaches every rank as an exception, not a hang.
"""
import contextlib
import time

import numpy as np

import rill
from rill import _C

MODES = ("naive", "separate")
_TAG = 0x5e9a  # the compile's messages, apart from the program's own sends
_OK, _FAILED = 0, 1


def compile_mode(world):
    """The compile mode for a global job over world ranks: RILL_GRAPH_COMPILE_MODE, else separate."""
    mode = _C._env_string("RILL_GRAPH_COMPILE_MODE") or "separate"
    if mode not in MODES:
        raise ValueError(f"[nn.Graph] RILL_GRAPH_COMPILE_MODE must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def compile_job(job, one_at_a_time=False):
    """This rank's part of the traced job (an _C._GraphJob), and what compiling it cost here:
    (part, {"compile_mode", "compile_cpu_s", "master_bytes_sent"}). compile_cpu_s is this thread's CPU seconds
    spent compiling (waiting for the master's bytes excluded); master_bytes_sent is what the master sent to the
    other ranks (0 on the others). one_at_a_time (rill.graph.compile_bench's): the ranks compile one after the
    other, the master first, so that on a machine with fewer cores than ranks each one's CPU time is its own."""
    import rill.distributed as dist
    world = dist.get_world_size() if job.is_global and dist.is_initialized() else 1
    if world == 1:
        part = job.compile()
        return part, {"compile_mode": "local", "compile_cpu_s": part.compile_cpu_s, "master_bytes_sent": 0}
    mode = compile_mode(world)
    rank = dist.get_rank()
    result, error = None, None
    try:
        if rank == 0:
            result = _in_turn(0, world, one_at_a_time, lambda: _master(job, mode, world))
        else:
            payloads = _receive(mode)  # raises the master's error, if it had one
            result = _in_turn(rank, world, one_at_a_time, lambda: _worker(payloads, mode, rank))
    except Exception as e:
        error = e
    # Every rank learns whether all have their plans: one that failed alone would leave the others waiting for it
    # in the first launch's collectives.
    failed = rill.tensor([0 if error is None else rank + 1], dtype=rill.int64)
    dist.all_reduce(failed, op=dist.ReduceOp.MAX)
    if error is not None:
        raise error
    if failed.item():
        raise RuntimeError(f"[nn.Graph] rank {failed.item() - 1} failed to compile its part of the graph (its "
                           "error is raised there); no rank runs it")
    return result


def _in_turn(rank, world, one_at_a_time, fn):
    """fn() on this rank; with one_at_a_time, in rank order, each rank after the one before it has finished (a
    rank whose fn raises still takes part in the turns, then raises)."""
    if not one_at_a_time:
        return fn()
    out, error = None, None
    for turn in range(world):
        if turn == rank:
            try:
                out = fn()
            except Exception as e:
                error = e
        _wait_asleep(rill.distributed.barrier(async_op=True))
    if error is not None:
        raise error
    return out


def _worker(payloads, mode, rank):
    """A rank other than the master: its part, from the master's payloads."""
    start = time.thread_time()
    if mode == "separate":
        part = _C._GraphJob.parse(payloads[0]).compile_rank(rank, take=True)
    else:
        part = _C._GraphPart.parse(payloads[0], payloads[1])
    return part, {"compile_mode": mode, "master_bytes_sent": 0, "compile_cpu_s": time.thread_time() - start}


def _master(job, mode, world, post=None, post_all=None):
    """The master: the logical half, every rank's payload posted to it, and its own part. post(dst, message)
    sends a message and returns its bytes, post_all(message, world) broadcasts one to every other rank and returns
    the bytes they receive (rill.graph.compile_bench's simulated worlds count them instead)."""
    post = post or _post
    post_all = post_all or _broadcast
    info = {"compile_mode": mode, "master_bytes_sent": 0}
    start = time.thread_time()
    served = 1  # ranks 1 .. served - 1 have their message
    try:
        job.make_logical()
        if mode == "separate":
            info["master_bytes_sent"] += post_all(_message([job.to_bytes()]), world)  # the same for every rank
            served = world
            part = job.compile_rank(0, take=True)
        else:
            for r in range(world):
                p = job.compile_rank(r)
                if r == 0:
                    part = p
                else:
                    info["master_bytes_sent"] += post(r, _message([p.job_bytes(), p.plan_bytes()]))
                    served = r + 1
    except Exception as e:  # the ranks still waiting for the master's bytes: tell them why none come
        failure = _message([f"{type(e).__name__}: {e}".encode()], status=_FAILED)
        if mode == "separate" and served < world:
            post_all(failure, world)
        elif mode != "separate":
            for r in range(served, world):
                post(r, failure)
        raise
    info["compile_cpu_s"] = time.thread_time() - start
    return part, info


def _message(payloads, status=_OK):
    """payloads (one or two bytes objects) as a message: a header (status, count, lengths), and their
    concatenation."""
    lengths = [len(p) for p in payloads]
    header = rill.tensor([status, len(payloads)] + lengths + [0] * (2 - len(payloads)), dtype=rill.int64)
    return header, rill.from_numpy(np.frombuffer(b"".join(payloads), dtype=np.uint8).copy())


def _post(dst, message):
    """Send message to rank dst; returns the bytes sent."""
    header, body = message
    rill.distributed.send(header, dst, tag=_TAG)
    rill.distributed.send(body, dst, tag=_TAG + 1)
    return header.numel() * 8 + body.numel()


def _broadcast(message, world):
    """Send message from the master to every other rank (one collective per part, MPI's tree); returns the bytes
    the other ranks receive."""
    header, body = message
    rill.distributed.broadcast(header, src=0)
    rill.distributed.broadcast(body, src=0)
    return (header.numel() * 8 + body.numel()) * (world - 1)


def _receive(mode):
    """The master's message to this rank: broadcast to all (separate), or this rank's own (naive)."""
    import rill.distributed as dist

    def take(t, tag):
        return dist.broadcast(t, src=0, async_op=True) if mode == "separate" else dist.irecv(t, 0, tag=tag)
    header = rill.empty(4, dtype=rill.int64)
    _wait_asleep(take(header, _TAG))
    body = rill.empty(sum(header.tolist()[2:]), dtype=rill.uint8)
    _wait_asleep(take(body, _TAG + 1))
    return _payloads((header, body), 0)


def _wait_asleep(work):
    """Wait for work, sleeping between looks: a worker waits for the master's compile, milliseconds, and a wait that
    yields in a loop (as wait() does, to return within microseconds) would take the cores from the master, with
    every other rank of a world larger than the machine doing the same."""
    while not work.is_completed():
        time.sleep(200e-6)
    work.wait()  # raises the receive's error, if it had one


def _payloads(message, src):
    """The payloads (bytes) of a message from rank src; raises the error it carries."""
    header, body = message
    status, count, *lengths = header.tolist()
    data = body.numpy().tobytes()
    if status == _FAILED:
        raise RuntimeError(f"[nn.Graph] rank {src} (the master) failed to compile the graph: {data.decode()}")
    out, at = [], 0
    for n in lengths[:count]:
        out.append(data[at:at + n])
        at += n
    return out


@contextlib.contextmanager
def simulated_world(world):
    """Inside it, this process traces global graphs as rank 0 of a world of `world` ranks, without rill.distributed
    (Note [A simulated world] in rill/_global.py): what python -m rill.graph.compile_bench compiles for ranks it
    does not start. Take the jobs with Graph._traced_job; a graph traced so cannot be run."""
    from rill import _global
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"[rill.graph] a simulated world has at least one rank, got {world!r}")
    if _global._simulated_world is not None:
        raise RuntimeError("[rill.graph] simulated worlds do not nest")
    _C._dist_register_kernels()  # the boxing ops the plans name (compiled, never run here)
    _global._simulated_world = world
    _global._simulated_groups.clear()
    try:
        yield
    finally:
        _global._simulated_world = None
        _global._simulated_groups.clear()

