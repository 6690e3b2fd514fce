"""Global tensors (docs/global.md): rill.placement, and Tensor.to_global / to_local / placement / sbp /
is_global, Module.to_global. A global tensor is the logical tensor of an SPMD program: its shape is the whole
tensor's, and each rank holds its local tensor as the SBP says. nn.Graph compiles a step over global tensors into
this rank's share of the work, with the collectives the SBPs need (src/rill/graph/passes/sbp.cpp); eager compute
on global tensors is out of scope, and reading one's values raises an error that says so."""
import rill
from rill import _C
from rill import sbp as _sbp_module
from rill.sbp import sbp as _Sbp


class placement:
    """The ranks a global tensor lives on: rill.placement("cpu", ranks=[0, 1]), or a mesh of them, a nested list:
    ranks=[[0, 1], [2, 3]] (Note [Meshes] in src/rill/core/sbp.h), on which a tensor has one SBP per mesh dim. The
    ranks are listed in increasing order (row-major on a mesh): split slice k is on the k-th rank."""

    def __init__(self, type="cpu", ranks=None):
        if type != "cpu":
            raise ValueError(f"[rill.placement] rill places tensors on 'cpu' ranks only, got type={type!r}")
        if ranks is None:
            raise TypeError("[rill.placement] give the ranks: rill.placement('cpu', ranks=[0, 1])")
        if isinstance(ranks, int):
            ranks = [ranks]
        flat, mesh = _flatten_mesh(ranks)
        if not flat or any(not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in flat):
            raise ValueError(f"[rill.placement] ranks must be a non-empty list of ints >= 0, got {ranks!r}")
        if sorted(set(flat)) != flat:
            raise ValueError(f"[rill.placement] ranks must be distinct and in increasing order (row-major on a "
                             f"mesh), got {flat}")
        self.type = type
        self._ranks = tuple(flat)
        self._mesh = tuple(mesh)

    @property
    def ranks(self):
        """The ranks as given: a list, or a nested list on a mesh."""
        out = list(self._ranks)
        for size in reversed(self._mesh[1:]):
            out = [out[k:k + size] for k in range(0, len(out), size)]
        return out

    @property
    def hierarchy(self):
        """The mesh's shape: [len(ranks)] for a list of ranks."""
        return list(self._mesh)

    def _group(self):
        """The process group of these ranks (the world's, or one made once per placement: every rank of the world
        makes it at the same point of the program, as the SPMD program makes its placements)."""
        return _group_of(self._ranks)

    def _dim_groups(self):
        """On a mesh: per dim, the group id of each of its lines, in the row-major order of the other coordinates
        (Note [Meshes]); [] for a list of ranks."""
        if len(self._mesh) == 1:
            return []
        ids = []
        for d in range(len(self._mesh)):
            for line in _lines(self._ranks, self._mesh, d):
                g = _group_of(line)
                ids.append(0 if g is None else g._id)
        return ids

    def _line(self, d, rank):
        """The ranks of dim d's line through rank (one of the placement's)."""
        for line in _lines(self._ranks, self._mesh, d):
            if rank in line:
                return line
        raise ValueError(f"[rill.placement] rank {rank} is not in {self!r}")

    def __eq__(self, other):
        return isinstance(other, placement) and (self.type, self._ranks, self._mesh) == (
            other.type, other._ranks, other._mesh)

    def __hash__(self):
        return hash((self.type, self._ranks, self._mesh))

    def __repr__(self):
        return f'rill.placement(type="{self.type}", ranks={self.ranks})'


def _flatten_mesh(ranks):
    """(the ranks row-major, the mesh's shape) of a list or a rectangular nested list of ranks."""
    if not isinstance(ranks, (list, tuple)):
        return [ranks], []
    if not any(isinstance(r, (list, tuple)) for r in ranks):
        return list(ranks), [len(ranks)]
    parts = [_flatten_mesh(r) for r in ranks]
    if any(not isinstance(r, (list, tuple)) for r in ranks) or any(p[1] != parts[0][1] for p in parts):
        raise ValueError(f"[rill.placement] a mesh of ranks must be a rectangular nested list, got {ranks!r}")
    return [r for p in parts for r in p[0]], [len(ranks)] + parts[0][1]


def _lines(ranks, mesh, d):
    """The lines of mesh dim d (the ranks differing only in their coordinate d), in the row-major order of the
    other coordinates."""
    import itertools
    import numpy as np
    grid = np.array(ranks).reshape(mesh)
    others = [range(n) for k, n in enumerate(mesh) if k != d]
    lines = []
    for coord in itertools.product(*others):
        index = list(coord)
        index.insert(d, slice(None))
        lines.append(tuple(int(r) for r in grid[tuple(index)]))
    return lines


def _group_of(ranks):
    """The process group of ranks (None: the world's), made once: every rank of the world makes it at the same
    point of the program."""
    if _simulated_world is not None:
        return _simulated_group(ranks)
    import rill.distributed as dist
    if not dist.is_initialized():
        raise RuntimeError("[rill.placement] global tensors communicate through rill.distributed: call "
                           "rill.distributed.init_process_group() first (launch with python -m "
                           "rill.distributed.run)")
    world = dist.get_world_size()
    for r in ranks:
        if r >= world:
            raise ValueError(f"[rill.placement] rank {r} is not in the world of {world} ranks")
    if ranks == tuple(range(world)):
        return None
    group = _groups.get(ranks)
    if group is None:
        group = _groups[ranks] = dist.new_group(list(ranks))
    return group


_groups = {}  # ranks -> its ProcessGroup (the world's is None)

# Note [A simulated world]
# rill.graph.compile_bench compiles rank r's plan for a world of N ranks in one process, without starting N (N up
# to 256 on a laptop): inside rill.graph.simulated_world(N) this process traces as rank 0 of N. Placements may name
# any rank below N, their groups are numbers, and to_global communicates nothing (a split tensor's local part is
# the one given, a broadcast one's is the tensor itself). The trace is the same logical job every rank would make;
# graphs traced so are compiled for the ranks by the bench, never launched.
_simulated_world = None
_simulated_groups = {}


class _SimulatedGroup:
    def __init__(self, group_id):
        self._id = group_id


def _simulated_group(ranks):
    for r in ranks:
        if r >= _simulated_world:
            raise ValueError(f"[rill.placement] rank {r} is not in the simulated world of {_simulated_world} ranks")
    if ranks == tuple(range(_simulated_world)):
        return None
    if ranks not in _simulated_groups:
        _simulated_groups[ranks] = _SimulatedGroup(len(_simulated_groups) + 1)
    return _simulated_groups[ranks]


def _this_rank():
    import rill.distributed as dist
    return 0 if _simulated_world is not None else dist.get_rank()


def _nd_sbp(sbp, dims, what):
    """sbp as a tuple of one SBP per dim of a mesh of `dims` dims (a single SBP for one dim; dims None: a mesh the
    graph knows, which checks the count)."""
    sbps = tuple(sbp) if isinstance(sbp, (list, tuple)) else (sbp,)
    if dims is not None and len(sbps) != dims:
        raise ValueError(f"[{what}] a placement of {dims} dim{'s' if dims > 1 else ''} takes {dims} SBP"
                         f"{'s, one per mesh dim' if dims > 1 else ''}, got {len(sbps)}")
    for s in sbps:
        if not isinstance(s, _Sbp):
            raise TypeError(f"[{what}] sbp must be rill.sbp.split(dim), rill.sbp.broadcast or rill.sbp.partial_sum, "
                            f"got {s!r}")
    return sbps


def _nd_str(sbps):
    return ",".join(s._str() for s in sbps)


def _placement_args(p):
    """(ranks, group id, mesh, dim_groups) of placement p, as the C++ side takes them (mesh [] for one dim)."""
    g = p._group()
    return list(p._ranks), 0 if g is None else g._id, list(p._mesh) if len(p._mesh) > 1 else [], p._dim_groups()


def to_global(self, placement=None, sbp=None):
    """This tensor as a global tensor over placement whose local tensor on this rank is (a copy of) self: with
    split(d) each rank's self is its slice (the global shape is d's size times the ranks), with broadcast the
    placement's first rank's self is every rank's, with partial_sum the global tensor is the sum of the ranks'.
    On a mesh, sbp is one SBP per mesh dim, each applied along that dim's lines (Note [Meshes] in
    src/rill/core/sbp.h): a split dim multiplies the global size, a broadcast dim copies each line's first rank's
    tensor to the line. On a global tensor, the same placement and SBP (or None) return it; a change of them is
    computed by a graph (eager conversion is out of scope)."""
    info = _C._global_info(self)
    if _C._tracing():
        return _traced_to_global(self, placement, sbp, info)
    if info is not None:
        here = _placement_of(info)
        same_place = placement is None or placement == here
        same_sbp = sbp is None or _nd_str(_nd_sbp(sbp, len(here._mesh), "to_global")) == info[2]
        if same_place and same_sbp:
            return self
        raise RuntimeError("[to_global] this tensor is already global; converting it to another placement or SBP "
                           "is done inside nn.Graph (eager compute on global tensors is out of scope)")
    if _C._is_global_storage(self):
        raise RuntimeError("[to_global] this tensor is a view of a global tensor, made eagerly: view the global "
                           "tensor inside nn.Graph.build instead")
    if placement is None or sbp is None:
        raise TypeError("[to_global] a local tensor needs both placement= and sbp=")
    if not isinstance(placement, globals()["placement"]):
        raise TypeError(f"[to_global] placement must be a rill.placement, got {type(placement).__name__}")
    sbps = _nd_sbp(sbp, len(placement._mesh), "to_global")
    import rill.distributed as dist
    ranks, group, mesh, dim_groups = _placement_args(placement)
    shape = list(self.shape)
    for s, n in zip(sbps, placement._mesh):
        if s._kind == "S":
            if s.dim >= len(shape):
                raise ValueError(f"[to_global] split({s.dim}) of a tensor of {len(shape)} dims")
            shape[s.dim] *= n
    rank = _this_rank()
    with rill.no_grad():
        local = self.detach().contiguous()
        if rank not in placement._ranks:  # a rank outside the placement holds nothing of it
            local = rill.empty(0, dtype=self.dtype)
        elif any(s == _sbp_module.broadcast for s in sbps):
            local = local.clone()
            # Broadcast along each broadcast dim: every rank of its line gets the line's first rank's.
            for d, s in enumerate(sbps):
                if s == _sbp_module.broadcast and _simulated_world is None:
                    line = placement._line(d, rank)
                    dist.broadcast(local, src=line[0], group=_group_of(line))
    out = _C._make_global(local, shape, ranks, group, _nd_str(sbps), mesh, dim_groups)
    if isinstance(self, rill.nn.Parameter):
        return rill.nn.Parameter(out, self.requires_grad)
    if self.requires_grad:
        out.requires_grad_(True)
    return out


def _traced_to_global(t, placement, sbp, info):
    """x.to_global(placement, sbp) inside nn.Graph.build: the graph boxes x to sbp (and sends it to placement's
    ranks when given), src/rill/graph/passes/sbp.cpp."""
    if sbp is None:
        raise TypeError("[to_global] inside nn.Graph.build, give sbp= (and placement= to move the value)")
    if placement is not None and not isinstance(placement, globals()["placement"]):
        raise TypeError(f"[to_global] placement must be a rill.placement, got {type(placement).__name__}")
    where = placement if placement is not None else _placement_of(info) if info is not None else None
    s = _nd_str(_nd_sbp(sbp, None if where is None else len(where._mesh), "to_global"))
    if info is not None and s == info[2] and (placement is None or placement == _placement_of(info)):
        return t
    if placement is None:
        return _C._to_global(t, s, [], 0)
    return _C._to_global(t, s, *_placement_args(placement))


def to_local(self):
    """This rank's local tensor of a global tensor (a local tensor is returned as it is)."""
    info = _C._global_info(self)
    if info is not None:
        return info[3]
    if _C._is_global_storage(self):
        raise RuntimeError("[to_local] this tensor is a view of a global tensor, made eagerly; call to_local() on the "
                           "global tensor itself")
    return self


def _info(self, what):
    info = _C._global_info(self)
    if info is None:
        raise RuntimeError(f"[Tensor.{what}] a local tensor has no {what}: make a global one with to_global()")
    return info


def _placement_of(info):
    """The rill.placement of a global tensor's info (_C._global_info)."""
    p = placement("cpu", list(info[0]))
    if info[4]:
        p._mesh = tuple(info[4])
    return p


def _placement(self):
    return _placement_of(_info(self, "placement"))


def _sbp(self):
    return tuple(_Sbp._parse(s) for s in _info(self, "sbp")[2].split(","))


def _is_global(self):
    return _C._is_global_storage(self)


def micro_batch(t, pieces):
    """The first of `pieces` micro-batches of the global tensor t (along dim 0), for tracing: its local tensor is
    the first piece of t's."""
    ranks, group, sbp, local, mesh, dim_groups = _C._global_info(t)
    shape = list(t.shape)
    shape[0] //= pieces
    return _C._make_global(local[:local.shape[0] // pieces] if local.numel() else local, shape, list(ranks), group,
                           sbp, mesh, dim_groups)


def state_like(p):
    """Zeros like parameter p for optimizer state: global with p's placement and SBP when p is global."""
    info = _C._global_info(p)
    if info is None:
        return rill.zeros_like(p)
    ranks, group, sbp, local, mesh, dim_groups = info
    return _C._make_global(rill.zeros_like(local), list(p.shape), list(ranks), group, sbp, mesh, dim_groups)


def module_to_global(self, placement=None, sbp=None, keep_global=False):
    """Make every parameter and buffer of the module global (Tensor.to_global), in place: each stays the same
    Python object (an optimizer made before sees the global tensor); returns the module. keep_global: leave the
    tensors that are global already as they are (a pipeline stage's, split inside it)."""
    for m in self.modules():
        for t in list(m._parameters.values()) + list(m._buffers.values()):
            if t is not None and not t.is_global:
                g = to_global(t.detach(), placement, sbp)
                g.requires_grad_(t.requires_grad)
                _C._become(t, g)
            elif t is not None and not keep_global:
                to_global(t, placement, sbp)  # the same placement and SBP, or an error
    return self


def _install():
    T = rill.Tensor
    T.to_global = to_global
    T.to_local = to_local
    T.placement = property(_placement)
    T.sbp = property(_sbp)
    T.is_global = property(_is_global)
    T.is_local = property(lambda self: not _C._is_global_storage(self))
    from rill.nn.modules.module import Module
    Module.to_global = module_to_global


_install()
