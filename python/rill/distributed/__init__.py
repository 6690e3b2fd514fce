"""rill.distributed: process groups and collectives on Open MPI, with torch.distributed's API.

Launch N processes with ``python -m rill.distributed.run --nproc N script.py`` (it wraps ``mpirun``), then in
the script::

    import rill.distributed as dist
    dist.init_process_group("mpi")
    dist.all_reduce(t)            # returns at once; t is ordered like any op (a read of t waits for it)

Every operation is an instruction on the comm stream (Note [The comm stream] in src/rill/comm/collectives.cpp),
so ``async_op=False`` and ``async_op=True`` differ only in what they return: None, or a ``Work`` whose
``wait()`` blocks until the operation is done. Errors (a failed MPI call) reach the user at the next sync
point that touches what the operation wrote, as kernel errors do.

Rules of MPI that hold here: every rank of a group issues the group's collectives in the same order; MPI
starts once per process, so after ``destroy_process_group()`` a new ``init_process_group()`` reuses it; a
process forked after ``init_process_group()`` (a DataLoader worker) must not communicate, and raises if it
tries. A rank that raises an uncaught exception ends the whole job (MPI_Abort), so no rank waits forever
for it.
"""
import atexit
import enum
import os
import pickle
import sys
import warnings

import numpy as np

import rill
from rill import _C


class ReduceOp(enum.IntEnum):
    """How a reduction combines the ranks' values. AVG divides the sum by the group's size (integer
    division for integer tensors); on bool tensors SUM and MAX are "any", PRODUCT and MIN "all"."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class Backend(str):
    """Backend names. rill has one backend, MPI; "gloo" (PyTorch's CPU backend) selects it too, so scripts
    written for torch.distributed run unchanged."""
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"


class ProcessGroup:
    """A group of ranks (world ranks in ascending order). Made by init_process_group (the world) and
    new_group."""

    def __init__(self, gid, ranks):
        self._id = gid
        self._ranks = list(ranks)
        me = _state.rank
        self._rank = self._ranks.index(me) if me in self._ranks else -1

    def rank(self):
        """This process's rank in the group, or -1 when it is not a member."""
        return self._rank

    def size(self):
        return len(self._ranks)

    def name(self):
        return "mpi"

    def __repr__(self):
        return f"ProcessGroup(id={self._id}, ranks={self._ranks})"


class _GroupMember:
    """torch.distributed.GroupMember: WORLD (the default group, once initialised) and NON_GROUP_MEMBER."""
    NON_GROUP_MEMBER = -100

    @property
    def WORLD(self):
        return _state.world


GroupMember = _GroupMember()
group = GroupMember  # dist.group.WORLD, as in PyTorch


class Work:
    """An operation started with async_op=True: wait() blocks until it is done (and raises its error);
    is_completed() says whether it is."""

    def __init__(self, tensors, result=None):
        self._tensors = [t for t in tensors if t is not None]
        self._result = result

    def wait(self, timeout=None):
        _C._dist_wait(self._tensors)
        return True

    def is_completed(self):
        return _C._dist_is_done(self._tensors)

    def is_success(self):
        return self.is_completed()

    def result(self):
        self.wait()
        return self._result if self._result is not None else self._tensors

    def get_future(self):
        raise RuntimeError("[Work.get_future] rill has no futures; call wait(), then read the tensors")


class _State:
    def __init__(self):
        self.world = None
        self.rank = -1
        self.size = -1
        self.groups = {}
        self.next_group = 1
        self.hooks_installed = False


_state = _State()


def is_available():
    """True: rill is built with its MPI backend."""
    return True


def is_mpi_available():
    return True


def is_gloo_available():
    return False


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return False


def is_initialized():
    """True between init_process_group and destroy_process_group."""
    return _state.world is not None


def _launcher_world():
    """(rank, size) the launcher gives this process, from Open MPI's or PMIx's environment; None without one."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMIX_RANK", None),
                               ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ and (size_var is None or size_var in os.environ):
            return int(os.environ[rank_var]), int(os.environ[size_var]) if size_var else None
    return None


def _threads_per_rank():
    """Each rank's share of the cores it may run on (Note [Ranks on few cores] in docs/distributed.md)."""
    cores = len(os.sched_getaffinity(0))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    return max(1, cores // max(1, local)), cores, local


def _share_the_cores():
    # Unless the user chose: intra-op threads from this rank's share of the cores, and, when the ranks
    # outnumber the cores, a short online spin for the VM threads (a spinning thread on a shared core costs a
    # busy rank its time slice).
    threads, cores, local = _threads_per_rank()
    if "RILL_NUM_THREADS" not in os.environ:
        rill.set_num_threads(threads)
    if local >= cores and "RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS" not in os.environ:
        rill.set_env_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", "20")


def _abort_on_uncaught(previous):
    def hook(kind, value, tb):
        previous(kind, value, tb)
        if is_initialized():
            sys.stderr.write(f"[rill.distributed] rank {_state.rank} of {_state.size} raised {kind.__name__}; "
                             "ending the whole job so no rank waits for it\n")
            sys.stderr.flush()
            _C._dist_abort(1)
    return hook


def _finalize_at_exit():
    if not _C._dist_initialized():
        return
    try:
        _C._dist_finalize()
    except Exception as e:  # noqa: BLE001  (exit goes on; say what happened)
        sys.stderr.write(f"[rill.distributed] shutting MPI down failed: {e}\n")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Start the default process group on MPI. Rank and world size come from the launcher (mpirun,
    ``python -m rill.distributed.run``, srun --mpi=pmix); torchrun-style RANK / WORLD_SIZE variables and the
    rank / world_size arguments, where given, must agree with them."""
    name = str(backend).lower() if backend is not None else "mpi"
    if name.startswith("cpu:"):
        name = name[4:]
    if name not in ("mpi", "gloo"):
        raise RuntimeError(f"[init_process_group] backend {backend!r} is not available: rill communicates CPU "
                           "tensors over MPI; use backend='mpi' (or 'gloo', which selects it)")
    if is_initialized():
        raise RuntimeError("[init_process_group] trying to initialize the default process group twice; call "
                           "destroy_process_group() first")
    launched = _launcher_world()
    env_size = int(os.environ["WORLD_SIZE"]) if "WORLD_SIZE" in os.environ else -1
    wanted = world_size if world_size not in (None, -1) else env_size
    if launched is None and wanted > 1:
        raise RuntimeError(f"[init_process_group] {wanted} processes were asked for, but this one was not started "
                           "by an MPI launcher; start the job with `python -m rill.distributed.run --nproc "
                           f"{wanted} script.py` or mpirun")
    _C.synchronize()
    r, n = _C._dist_init()
    if wanted not in (-1, n):
        raise RuntimeError(f"[init_process_group] world_size={wanted} was asked for, but the launcher started {n} "
                           "processes")
    want_rank = rank if rank not in (None, -1) else int(os.environ.get("RANK", -1))
    if want_rank not in (-1, r):
        raise RuntimeError(f"[init_process_group] rank {want_rank} was asked for, but MPI gave this process rank "
                           f"{r}; let the launcher set the ranks")
    _state.rank, _state.size = r, n
    _state.world = ProcessGroup(0, range(n))
    _state.groups = {0: _state.world}
    _share_the_cores()
    if not _state.hooks_installed:
        _state.hooks_installed = True
        sys.excepthook = _abort_on_uncaught(sys.excepthook)
        atexit.register(_finalize_at_exit)


def destroy_process_group(group=None):
    """Free group (default: every group, after which init_process_group may be called again). MPI itself
    stays up until the process exits."""
    _check_init("destroy_process_group")
    _C.synchronize()
    if group is None or group is _state.world:
        for gid in sorted(_state.groups):
            if gid != 0:
                _C._dist_destroy_group(gid)
        _state.world = None
        _state.groups = {}
        return
    _C._dist_destroy_group(group._id)
    _state.groups.pop(group._id, None)


def _check_init(what):
    if not is_initialized():
        raise RuntimeError(f"[{what}] Default process group has not been initialized, please make sure to call "
                           "init_process_group.")


def _group(group, what):
    if group is None and _state.world is not None:  # the common case first: every collective comes here
        return _state.world
    _check_init(what)
    if group is None or group is GroupMember.WORLD:
        return _state.world
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"[{what}] group must be a ProcessGroup from new_group(), got {type(group).__name__}")
    if group._id not in _state.groups:
        raise ValueError(f"[{what}] the group was destroyed")
    return group


def _member(g, what):
    if g._rank >= 0:
        return True
    warnings.warn(f"Running {what} on global rank {_state.rank} which does not belong to the given group.")
    return False


def _group_rank(g, global_rank, what, arg):
    if not isinstance(global_rank, int) or global_rank not in g._ranks:
        raise ValueError(f"[{what}] {arg}={global_rank!r} is not a rank of the group (its ranks: {g._ranks})")
    return g._ranks.index(global_rank)


def _tensor(t, what, name="tensor"):
    if not isinstance(t, rill.Tensor):
        raise TypeError(f"[{what}] {name} must be a rill.Tensor, got {type(t).__name__}")
    return t


def _op(op, what):
    if type(op) is ReduceOp:  # every collective comes here: no enum lookup
        return op._value_
    if type(op) is int and 0 <= op < len(ReduceOp):
        return op
    raise ValueError(f"[{what}] unknown op {op!r}; use a rill.distributed.ReduceOp")


def _done(tensors, async_op, result=None):
    return Work(tensors, result) if async_op else None


def get_rank(group=None):
    """This process's rank in group (default: the world); -1 when it is not a member."""
    return _group(group, "get_rank").rank()


def get_world_size(group=None):
    """Number of ranks in group (default: the world); -1 when this process is not a member."""
    g = _group(group, "get_world_size")
    return g.size() if g.rank() >= 0 else -1


def get_backend(group=None):
    _group(group, "get_backend")
    return "mpi"


def get_process_group_ranks(group):
    return list(_group(group, "get_process_group_ranks")._ranks)


def get_global_rank(group, group_rank):
    return _group(group, "get_global_rank")._ranks[group_rank]


def get_group_rank(group, global_rank):
    return _group_rank(_group(group, "get_group_rank"), global_rank, "get_group_rank", "global_rank")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A group of the world ranks `ranks` (default: all). Every rank of the world must call it, in the same
    order, members or not (MPI makes the group collectively)."""
    _check_init("new_group")
    ranks = sorted(set(range(_state.size) if ranks is None else (int(r) for r in ranks)))
    for r in ranks:
        if not 0 <= r < _state.size:
            raise ValueError(f"[new_group] rank {r} is not in the world of {_state.size} ranks")
    gid = _state.next_group
    _state.next_group += 1
    _C._dist_new_group(gid, ranks)
    g = ProcessGroup(gid, ranks)
    _state.groups[gid] = g
    return g


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier (async_op=True: a Work to wait on)."""
    g = _group(group, "barrier")
    if not _member(g, "barrier"):
        return None
    token = _C._dist_barrier(g._id)
    if async_op:
        return Work([token])
    _C._dist_wait([token])
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    return barrier(group)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce tensor over the group, in place on every rank."""
    g = _group(group, "all_reduce")
    _tensor(tensor, "all_reduce")
    if not _member(g, "all_reduce"):
        return None
    _C._dist_all_reduce(tensor, _op(op, "all_reduce"), g._id)
    return _done([tensor], async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Global rank src's tensor, in place on every rank of the group."""
    g = _group(group, "broadcast")
    _tensor(tensor, "broadcast")
    if not _member(g, "broadcast"):
        return None
    root = group_src if group_src is not None else _group_rank(g, src, "broadcast", "src")
    _C._dist_broadcast(tensor, root, g._id)
    return _done([tensor], async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce tensor over the group into global rank dst's tensor (the others' are left as they are)."""
    g = _group(group, "reduce")
    _tensor(tensor, "reduce")
    if not _member(g, "reduce"):
        return None
    root = group_dst if group_dst is not None else _group_rank(g, dst, "reduce", "dst")
    _C._dist_reduce(tensor, _op(op, "reduce"), root, g._id)
    return _done([tensor], async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's tensor into tensor_list (one tensor per rank of the group, in rank order)."""
    g = _group(group, "all_gather")
    _tensor(tensor, "all_gather")
    if not _member(g, "all_gather"):
        return None
    if len(tensor_list) != g.size():
        raise ValueError(f"[all_gather] tensor_list has {len(tensor_list)} tensors; the group has {g.size()} ranks")
    for i, t in enumerate(tensor_list):
        _tensor(t, "all_gather", f"tensor_list[{i}]")
        if tuple(t.shape) != tuple(tensor.shape) or t.dtype != tensor.dtype:
            raise ValueError(f"[all_gather] tensor_list[{i}] is {t.dtype} {tuple(t.shape)}; every entry must match "
                             f"the input, {tensor.dtype} {tuple(tensor.shape)}")
    gathered = _C._dist_all_gather(tensor, g.size(), g._id)
    with rill.no_grad():
        for i, t in enumerate(tensor_list):
            t.copy_(gathered[i])
    return _done(tensor_list, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's input_tensor, concatenated (output of shape [size * n, ...]) or stacked ([size, n, ...])
    in rank order into output_tensor."""
    g = _group(group, "all_gather_into_tensor")
    _tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    if not _member(g, "all_gather_into_tensor"):
        return None
    if output_tensor.numel() != input_tensor.numel() * g.size() or output_tensor.dtype != input_tensor.dtype:
        raise ValueError(f"[all_gather_into_tensor] the output ({output_tensor.dtype} {tuple(output_tensor.shape)}) "
                         f"must hold the group's {g.size()} inputs ({input_tensor.dtype} "
                         f"{tuple(input_tensor.shape)})")
    gathered = _C._dist_all_gather(input_tensor, g.size(), g._id)
    with rill.no_grad():
        output_tensor.copy_(gathered.reshape(output_tensor.shape))
    return _done([output_tensor], async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """input (first dimension size * n) reduced over the group; this rank's share (rows rank*n ... ) into
    output."""
    g = _group(group, "reduce_scatter_tensor")
    _tensor(output, "reduce_scatter_tensor", "output")
    _tensor(input, "reduce_scatter_tensor", "input")
    if not _member(g, "reduce_scatter_tensor"):
        return None
    _C._dist_reduce_scatter(output, input, _op(op, "reduce_scatter_tensor"), g.size(), g._id)
    return _done([output], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """input_list (one tensor per rank) reduced over the group; entry rank's result into output."""
    g = _group(group, "reduce_scatter")
    if len(input_list) != g.size():
        raise ValueError(f"[reduce_scatter] input_list has {len(input_list)} tensors; the group has {g.size()} ranks")
    return reduce_scatter_tensor(output, rill.stack([t.reshape(output.shape) for t in input_list]), op, group,
                                 async_op)


def _peer(g, rank, what, arg):
    r = _group_rank(g, rank, what, arg)
    if r == g.rank():
        raise ValueError(f"[{what}] {arg}={rank} is this process's own rank; a rank cannot {what} to itself")
    return r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send tensor to global rank dst; returns a Work (the send is done once wait() returns)."""
    g = _group(group, "isend")
    _tensor(tensor, "isend")
    if not _member(g, "isend"):
        return None
    peer = group_dst if group_dst is not None else _peer(g, dst, "send", "dst")
    return Work([_C._dist_send(tensor, peer, int(tag), g._id)])


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into tensor from global rank src (None: any rank); returns a Work."""
    g = _group(group, "irecv")
    _tensor(tensor, "irecv")
    if not _member(g, "irecv"):
        return None
    peer = group_src if group_src is not None else (-1 if src is None else _peer(g, src, "recv", "src"))
    source = _C._dist_recv(tensor, peer, int(tag), g._id)
    return Work([tensor, source])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send tensor to global rank dst. Returns at once: later writes to tensor wait for the send."""
    isend(tensor, dst, group, tag, group_dst)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into tensor from global rank src (None: any rank); waits, and returns the sender's rank."""
    g = _group(group, "recv")
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return g._ranks[int(work._tensors[1].item())]


def batch_isend_irecv(p2p_op_list):
    """Start every P2POp of the list; returns their Works."""
    return [op.op(op.tensor, op.peer, op.group, op.tag) for op in p2p_op_list]


class P2POp:
    """One point-to-point operation for batch_isend_irecv: op is isend or irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0):
        if op not in (isend, irecv):
            raise ValueError("[P2POp] op must be rill.distributed.isend or rill.distributed.irecv")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


# --- Python objects, pickled into uint8 tensors -------------------------------------------------------------

def _to_bytes(obj):
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    return rill.tensor(data.copy()), len(data)


def all_gather_object(object_list, obj, group=None):
    """Every rank's obj (picklable) into object_list, in rank order."""
    g = _group(group, "all_gather_object")
    if not _member(g, "all_gather_object"):
        return
    payload, n = _to_bytes(obj)
    sizes = [rill.zeros(1, dtype=rill.int64) for _ in range(g.size())]
    all_gather(sizes, rill.tensor([n], dtype=rill.int64), group)
    longest = max(int(s.item()) for s in sizes)
    padded = rill.zeros(longest, dtype=rill.uint8)
    padded[:n] = payload
    out = [rill.zeros(longest, dtype=rill.uint8) for _ in range(g.size())]
    all_gather(out, padded, group)
    for i, (t, s) in enumerate(zip(out, sizes)):
        object_list[i] = pickle.loads(t.numpy()[:int(s.item())].tobytes())


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Global rank src's object_list (picklable objects), in place on every rank."""
    g = _group(group, "broadcast_object_list")
    if not _member(g, "broadcast_object_list"):
        return
    root = group_src if group_src is not None else _group_rank(g, src, "broadcast_object_list", "src")
    root_global = g._ranks[root]
    mine = g.rank() == root
    payload, n = _to_bytes(list(object_list)) if mine else (None, 0)
    size = rill.tensor([n], dtype=rill.int64)
    broadcast(size, root_global, group)
    buf = payload if mine else rill.zeros(int(size.item()), dtype=rill.uint8)
    broadcast(buf, root_global, group)
    if not mine:
        object_list[:] = pickle.loads(buf.numpy().tobytes())


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """Every rank's obj into object_gather_list on global rank dst."""
    g = _group(group, "gather_object")
    everyone = [None] * g.size()
    all_gather_object(everyone, obj, group)
    if _state.rank == dst and object_gather_list is not None:
        object_gather_list[:] = everyone


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's tensor into gather_list on global rank dst."""
    g = _group(group, "gather")
    if not _member(g, "gather"):
        return None
    root = group_dst if group_dst is not None else _group_rank(g, 0 if dst is None else dst, "gather", "dst")
    gathered = _C._dist_all_gather(_tensor(tensor, "gather"), g.size(), g._id)
    if g.rank() == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError(f"[gather] the destination needs a gather_list of {g.size()} tensors")
        with rill.no_grad():
            for i, t in enumerate(gather_list):
                t.copy_(gathered[i])
        return _done(gather_list, async_op)
    return _done([gathered], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Entry rank of global rank src's scatter_list into tensor on every rank."""
    g = _group(group, "scatter")
    if not _member(g, "scatter"):
        return None
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "scatter", "src")
    if g.rank() == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError(f"[scatter] the source needs a scatter_list of {g.size()} tensors")
        stacked = rill.stack([t.reshape(tensor.shape) for t in scatter_list])
    else:
        stacked = rill.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
    _C._dist_broadcast(stacked, root, g._id)
    with rill.no_grad():
        tensor.copy_(stacked[g.rank()])
    return _done([tensor], async_op)

