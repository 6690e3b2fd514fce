"""Runs inside each rank of tests/python/test_graph_global.py's jobs: global tensors and graphs over them. Each
case prints PASS <case> rank <r> when its checks hold on this rank."""
import numpy as np

import rill
import rill.distributed as dist
from rill import nn

S0, S1, B, P = rill.sbp.split(0), rill.sbp.split(1), rill.sbp.broadcast, rill.sbp.partial_sum


def world():
    return rill.placement("cpu", ranks=list(range(dist.get_world_size())))


class Step(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


class MovedStep(nn.Graph):
    """Runs m[:-1] where its inputs are (gathered first with gather_input), moves the activation to placement `to`
    (broadcast), and runs m[-1] and the loss there: OneFlow's way of writing a pipeline by hand."""

    def __init__(self, m, optimizer, to, gather_input=False):
        super().__init__()
        self.m = m
        self.to_placement = to
        self.gather_input = gather_input
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, y):
        h = x.to_global(sbp=B) if self.gather_input else x
        for layer in list(self.m)[:-1]:
            h = layer(h)
        h = h.to_global(placement=self.to_placement, sbp=B)
        loss = self.loss_fn(self.m[-1](h), y)
        loss.backward()
        return loss


def data(steps, n, features=8, classes=4):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((n, features)).astype(np.float32), rng.integers(0, classes, n))
            for _ in range(steps)]


def mlp():
    rill.manual_seed(3)
    return nn.Sequential(nn.Linear(8, 24), nn.ReLU(), nn.Linear(24, 4))


def case_tensors():
    """to_global / to_local / placement / sbp, and the errors of what is out of scope."""
    pl, r, n = world(), dist.get_rank(), dist.get_world_size()
    local = rill.arange(6.0).reshape(2, 3) + 10 * r
    g = local.to_global(pl, S0)
    assert g.is_global and not g.is_local and not local.is_global
    assert tuple(g.shape) == (2 * n, 3), g.shape
    assert g.placement == pl and g.sbp == (S0,)
    assert np.array_equal(g.to_local().numpy(), local.numpy())
    assert g.to_global(pl, S0) is g and g.to_global() is g
    # broadcast: the first rank's values on every rank
    b = (rill.ones(3) * (r + 1)).to_global(pl, B)
    assert np.array_equal(b.to_local().numpy(), np.ones(3)), b.to_local()
    # eager compute on a global tensor: a clear error at the sync point, not a wrong value
    try:
        (g + 1).numpy()
        raise AssertionError("eager compute on a global tensor did not raise")
    except RuntimeError as e:
        assert "global tensor" in str(e) and "to_local()" in str(e), e
    for bad, kind in [(lambda: g.to_global(pl, B), RuntimeError), (lambda: local.to_global(pl), TypeError),
                      (lambda: local.to_global(pl, "S(0)"), TypeError),
                      (lambda: local.to_global(pl, [S0, S0]), ValueError)]:
        try:
            bad()
            raise AssertionError("no error")
        except kind:
            pass
    p = nn.Parameter(rill.ones(2, 2)).to_global(pl, B)
    assert isinstance(p, nn.Parameter) and p.requires_grad


def case_data_parallel():
    """Inputs split(0), parameters broadcast: 20 SGD steps equal one process on the whole batch."""
    pl, r, n = world(), dist.get_rank(), dist.get_world_size()
    batch = 4 * n
    steps = data(20, batch)
    ref = mlp()
    ref_step = Step(ref, rill.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9))
    model = mlp().to_global(pl, B)
    step = Step(model, rill.optim.SGD(model.parameters(), lr=0.2, momentum=0.9))
    for x, y in steps:
        want = ref_step(rill.tensor(x), rill.tensor(y)).item()
        rows = slice(r * 4, (r + 1) * 4)
        loss = step(rill.tensor(x[rows]).to_global(pl, S0), rill.tensor(y[rows]).to_global(pl, S0))
        assert loss.sbp == (B,) and tuple(loss.shape) == ()
        assert abs(loss.to_local().item() - want) <= 1e-5, (loss.to_local().item(), want)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.sbp == (B,)
        assert np.abs(p.to_local().numpy() - q.detach().numpy()).max() <= 1e-5
    job = step.job()
    assert job["global"] and all(op["placement"] == list(range(n)) for op in job["ops"] if op["op_type"] == "linear")
    types = [op["op_type"] for op in job["ops"]]
    # one all-reduce per gradient (4 parameters), none in the forward
    assert types.count("_boxing_all_reduce") == 4, types


def case_data_parallel_norm_embedding():
    """Data parallelism through LayerNorm and Embedding (rows split, their tables' gradients summed)."""
    pl, r, n = world(), dist.get_rank(), dist.get_world_size()

    def model():
        rill.manual_seed(11)
        return nn.Sequential(nn.Embedding(10, 8), nn.Flatten(), nn.LayerNorm(24), nn.Linear(24, 4))

    rng = np.random.default_rng(2)
    steps = [(rng.integers(0, 10, (2 * n, 3)), rng.integers(0, 4, 2 * n)) for _ in range(10)]
    ref = model()
    ref_step = Step(ref, rill.optim.Adam(ref.parameters(), lr=0.01))
    m = model().to_global(pl, B)
    step = Step(m, rill.optim.Adam(m.parameters(), lr=0.01))
    for x, y in steps:
        want = ref_step(rill.tensor(x), rill.tensor(y)).item()
        rows = slice(2 * r, 2 * r + 2)
        got = step(rill.tensor(x[rows]).to_global(pl, S0), rill.tensor(y[rows]).to_global(pl, S0))
        assert abs(got.to_local().item() - want) <= 1e-5, (got.to_local().item(), want)
    for p, q in zip(m.parameters(), ref.parameters()):
        assert np.abs(p.to_local().numpy() - q.detach().numpy()).max() <= 1e-5
    sbps = {op["op_type"]: op.get("out_sbps") for op in step.job()["ops"]}
    assert sbps["embedding"] == ["S(0)"] and sbps["layer_norm"] == ["S(0)"] * 3, sbps


def case_tensor_parallel():
    """A column-parallel Linear (weight split(0)) then a row-parallel one (weight split(1)) == the plain pair."""
    pl, r, n = world(), dist.get_rank(), dist.get_world_size()
    ref = mlp()
    ref_step = Step(ref, rill.optim.Adam(ref.parameters(), lr=0.01))
    model = mlp()
    fc1, fc2 = model[0], model[2]
    k = 24 // n
    rows, cols = slice(r * k, (r + 1) * k), (slice(None), slice(r * k, (r + 1) * k))
    fc1.weight = nn.Parameter(fc1.weight.detach()[rows].clone().to_global(pl, S0))
    fc1.bias = nn.Parameter(fc1.bias.detach()[rows].clone().to_global(pl, S0))
    fc2.weight = nn.Parameter(fc2.weight.detach()[cols].clone().to_global(pl, S1))
    fc2.bias = nn.Parameter(fc2.bias.detach().to_global(pl, B))
    step = Step(model, rill.optim.Adam(model.parameters(), lr=0.01))
    for x, y in data(20, 6):
        want = ref_step(rill.tensor(x), rill.tensor(y)).item()
        got = step(rill.tensor(x).to_global(pl, B), rill.tensor(y).to_global(pl, B)).to_local().item()
        assert abs(got - want) <= 1e-5, (got, want)
    assert np.abs(fc1.weight.to_local().numpy() - ref[0].weight.detach().numpy()[rows]).max() <= 1e-5
    assert np.abs(fc2.weight.to_local().numpy() - ref[2].weight.detach().numpy()[cols]).max() <= 1e-5
    ops = {op["name"]: op for op in step.job()["ops"]}
    linear = [op for op in ops.values() if op["op_type"] == "linear"]
    assert [op["out_sbps"] for op in linear] == [["S(1)"], ["P"]], linear
    # the optimizer state of a split parameter is split alike
    state = step._optimizers[0].optimizer.state[fc1.weight]
    assert state["exp_avg"].sbp == (S0,) and tuple(state["exp_avg"].to_local().shape) == (k, 8)


def local_part(a, sbps, coord, mesh=(2, 2)):
    """Rank `coord`'s part of the numpy array a laid out as sbps (no partial) over a mesh (Note [Meshes])."""
    for sbp, c, n in zip(sbps, coord, mesh):
        if sbp != B:
            a = np.split(a, n, axis=sbp.dim)[c]
    return a


def case_mesh():
    """A 2 x 2 mesh (4 ranks): global tensors with an SBP per mesh dim, every change of SBP boxed dim by dim, and
    an MLP trained data-parallel along dim 0 and tensor-parallel along dim 1, equal to one process."""
    mesh = rill.placement("cpu", ranks=[[0, 1], [2, 3]])
    r = dist.get_rank()
    coord = (r // 2, r % 2)
    full = np.arange(64, dtype=np.float32).reshape(8, 8)
    x = rill.tensor(local_part(full, (S0, S1), coord)).to_global(mesh, (S0, S1))
    assert tuple(x.shape) == (8, 8) and x.sbp == (S0, S1) and x.placement == mesh
    b = rill.tensor(full if r == 0 else np.zeros_like(full)).to_global(mesh, (B, B))  # from rank 0, along each line
    assert np.array_equal(b.to_local().numpy(), full)

    class Box(nn.Graph):
        def build(self, x):
            return (x.to_global(sbp=(B, B)), x.to_global(sbp=(S1, S0)), x.to_global(sbp=(S0, S0)),
                    x.to_global(sbp=(B, S1)), (x * 2).sum(0), x.sum(1, keepdim=True).to_global(sbp=(S0, P)))

    outs = Box()(x)
    wants = [full, full, full, full, 2 * full.sum(0), full.sum(1, keepdims=True)]
    for k, (out, want) in enumerate(zip(outs, wants)):
        got = out.to_local().numpy()
        sbps = out.sbp
        if P in sbps:  # (S(0), P): the summands of a line sum to its part
            parts = rill.tensor(got)
            dist.all_reduce(parts, group=rill._global._group_of(mesh._line(1, r)))
            got, sbps = parts.numpy(), tuple(B if s == P else s for s in sbps)
        assert np.array_equal(got, local_part(want, sbps, coord)), (k, sbps, got)
    assert [o.sbp for o in outs[:4]] == [(B, B), (S1, S0), (S0, S0), (B, S1)]

    ref = mlp()
    ref_step = Step(ref, rill.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9))
    model = mlp()
    layout = {"0.weight": (B, S0), "0.bias": (B, S0), "2.weight": (B, S1), "2.bias": (B, B)}
    for name, p in model.named_parameters():
        part = rill.tensor(local_part(p.detach().numpy(), layout[name], coord))
        rill._C._become(p, nn.Parameter(part.to_global(mesh, layout[name])))
    step = Step(model, rill.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    for xs, ys in data(10, 8):
        want = ref_step(rill.tensor(xs), rill.tensor(ys)).item()
        got = step(rill.tensor(local_part(xs, (S0, B), coord)).to_global(mesh, (S0, B)),
                   rill.tensor(local_part(ys, (S0, B), coord)).to_global(mesh, (S0, B)))
        assert got.sbp == (B, B) and abs(got.to_local().item() - want) <= 1e-5, (got.to_local().item(), want)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert np.abs(p.to_local().numpy() - local_part(q.detach().numpy(), layout[name], coord)).max() <= 1e-5, name
    linear = [op for op in step.job()["ops"] if op["op_type"] == "linear"]
    assert [op["out_sbps"] for op in linear] == [["S(0),S(1)"], ["S(0),P"]], linear


def two_stage_mlp():
    rill.manual_seed(5)
    return nn.Sequential(nn.Sequential(nn.Linear(8, 16), nn.ReLU()),
                         nn.Sequential(nn.Linear(16, 12), nn.Tanh(), nn.Linear(12, 4)))


def two_stages():
    n = dist.get_world_size()
    return rill.placement("cpu", ranks=[0]), rill.placement("cpu", ranks=list(range(1, n)))


class Pipeline(nn.Graph):
    """m[0] as stage 0 on `first`, m[1] as stage 1 on `second`, `micro` micro-batches per call (each a step of its
    own under SSP)."""

    def __init__(self, m, opt, micro, ssp=False):
        from rill.nn.graph import GraphModule
        super().__init__()
        first, second = two_stages()
        self.m = m
        self.m[0].to(GraphModule).set_stage(0, first)
        self.m[1].to(GraphModule).set_stage(1, second)
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps(micro)
        self.config.enable_ssp(ssp)

    def build(self, x, y):
        loss = self.loss_fn(self.m(x), y)
        loss.backward()
        return loss


def check_own_parameters(m, ref):
    mine = [p for p in m.parameters() if dist.get_rank() in p.placement.ranks]
    theirs = [q for p, q in zip(m.parameters(), ref.parameters()) if dist.get_rank() in p.placement.ranks]
    assert mine
    for p, q in zip(mine, theirs):
        assert np.abs(p.to_local().numpy() - q.detach().numpy()).max() <= 1e-5


def case_pipeline():
    """Two stages on two ranks (rank 1 and 2 of 3 take the second), 4 micro-batches: each step's loss equals
    one process running the same micro-batches eagerly."""
    first, second = two_stages()
    micro, steps = 4, 8
    ref = two_stage_mlp()
    ref_opt = rill.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    m = two_stage_mlp()
    g = Pipeline(m, rill.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), micro)
    assert m[0][0].weight.placement == first and m[1][0].weight.placement == second
    for x, y in data(steps, 4 * micro):
        want = 0.0
        ref_opt.zero_grad()
        for k in range(micro):
            rows = slice(4 * k, 4 * k + 4)
            loss = nn.functional.cross_entropy(ref(rill.tensor(x[rows])), rill.tensor(y[rows])) / micro
            loss.backward()
            want += loss.item()
        ref_opt.step()
        got = g(rill.tensor(x).to_global(first, B), rill.tensor(y).to_global(second, B))
        assert got.placement == second
        if dist.get_rank() == 0:
            assert got.to_local().numel() == 0  # the loss is the last stage's
        else:
            assert abs(got.to_local().item() - want) <= 1e-5, (got.to_local().item(), want)
    check_own_parameters(m, ref)
    types = [op["op_type"] for op in g.job()["ops"]]
    # the activations go to the second stage, the gradients come back (a rank of the second stage past the
    # first one's size receives only)
    assert "_boxing_recv" in types and ("_boxing_send" in types or dist.get_rank() > 1), types


def case_ssp_pipeline():
    """SSP over two stages, 8 micro-batches per call, each an SGD-momentum step of its own: stage 0 runs ahead on
    weights up to 1 update old, stage 1 on current ones. Each call's loss and the weights equal one process
    replaying the same steps eagerly, each micro-batch on the weight versions g.stats()["ssp"] reports."""
    first, second = two_stages()
    micro, steps = 8, 4
    ref = two_stage_mlp()
    ref_opt = rill.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    m = two_stage_mlp()
    g = Pipeline(m, rill.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), micro, ssp=True)
    stage_of = [0, 0, 1, 1, 1, 1]  # of each parameter, in order
    history = [[p.detach().clone() for p in ref.parameters()]]  # the weights after k steps
    replica = two_stage_mlp()
    for x, y in data(steps, 4 * micro):
        got = g(rill.tensor(x).to_global(first, B), rill.tensor(y).to_global(second, B))
        ssp = g.stats()["ssp"]
        stale = rill.zeros(2, micro, dtype=rill.int64)  # every stage's, from the ranks that run it
        for stage, per_piece in ssp["staleness"].items():
            assert max(per_piece) <= ssp["bound"][stage] == 1 - stage, ssp
            stale[stage] = rill.tensor(per_piece)
        dist.all_reduce(stale, op=dist.ReduceOp.MAX)
        want = 0.0
        for k in range(micro):
            with rill.no_grad():
                for j, q in enumerate(replica.parameters()):
                    q.copy_(history[len(history) - 1 - int(stale[stage_of[j], k])][j])
            replica.zero_grad()
            rows = slice(4 * k, 4 * k + 4)
            loss = nn.functional.cross_entropy(replica(rill.tensor(x[rows])), rill.tensor(y[rows]))
            loss.backward()
            want += loss.item() / micro
            for p, q in zip(ref.parameters(), replica.parameters()):
                p.grad = q.grad.clone()
            ref_opt.step()
            history.append([p.detach().clone() for p in ref.parameters()])
        if dist.get_rank() > 0:
            assert abs(got.to_local().item() - want) <= 1e-5, (got.to_local().item(), want)
    check_own_parameters(m, ref)
    ssp = g.stats()["ssp"]
    if dist.get_rank() == 0:  # stage 0 starts micro-batch 1 before micro-batch 0's update: it does run ahead
        assert ssp["max_staleness"] == {0: 1} and ssp["staleness"][0][1] == 1, ssp
    else:
        assert ssp["max_staleness"] == {1: 0}, ssp
    assert ssp["variables"] and all(len(v) == micro for v in ssp["variables"].values()), ssp


def case_to_global_in_build():
    """x.to_global(...) inside build(): a split value gathered where the program asks, and a value moved to
    another placement by hand (OneFlow's way of writing a pipeline), both equal to one process."""
    n = dist.get_world_size()
    first, last = rill.placement("cpu", ranks=[0]), rill.placement("cpu", ranks=[n - 1])

    ref = mlp()
    ref_step = Step(ref, rill.optim.SGD(ref.parameters(), lr=0.1))
    m = mlp()
    m[0].to_global(world(), B)
    m[2].to_global(last, B)
    g = MovedStep(m, rill.optim.SGD(m.parameters(), lr=0.1), last, gather_input=True)
    r = dist.get_rank()
    for x, y in data(5, 2 * n):
        want = ref_step(rill.tensor(x), rill.tensor(y)).item()
        loss = g(rill.tensor(x[2 * r:2 * r + 2]).to_global(world(), S0), rill.tensor(y).to_global(last, B))
        if r == n - 1:
            assert abs(loss.to_local().item() - want) <= 1e-5, (loss.to_local().item(), want)
    types = [op["op_type"] for op in g.job()["ops"]]
    assert "_boxing_all_gather" in types, types
    # rank 0 sends the activation to the last rank, which sends the gradient back to every rank
    assert "_boxing_recv" in types and ("_boxing_send" in types) == (r in (0, n - 1)), types
    if r == n - 1:
        assert np.abs(m[2].weight.to_local().numpy() - ref[2].weight.detach().numpy()).max() <= 1e-5


def canonical_plan(plan):
    """The plan with every id replaced by its item's place in its list (the form two compile modes must agree on)."""
    tasks = {t["id"]: k + 1 for k, t in enumerate(plan["tasks"])}
    tasks[0] = 0  # "no producer"
    regsts = {r["id"]: k for k, r in enumerate(plan["regsts"])}
    blocks = {b["id"]: k for k, b in enumerate(plan["mem_blocks"])}
    chunks = {c["id"]: k for k, c in enumerate(plan["chunks"])}
    out = {"rank": plan["rank"], "pieces": plan["pieces"], "tasks": [], "regsts": [], "mem_blocks": [], "chunks": []}
    for t in plan["tasks"]:
        out["tasks"].append(dict(t, id=tasks[t["id"]], in_regsts=[regsts[i] for i in t["in_regsts"]],
                                 out_regsts=[regsts[i] for i in t["out_regsts"]]))
    for r in plan["regsts"]:
        out["regsts"].append(dict(r, id=regsts[r["id"]], producer=tasks[r["producer"]],
                                  consumers=[tasks[c] for c in r["consumers"]],
                                  mem_block_id=blocks.get(r["mem_block_id"], -1),
                                  alias_of=regsts.get(r["alias_of"], -1)))
    for b in plan["mem_blocks"]:
        out["mem_blocks"].append(dict(b, id=blocks[b["id"]], chunk_id=chunks[b["chunk_id"]]))
    for c in plan["chunks"]:
        out["chunks"].append(dict(c, id=chunks[c["id"]]))
    return out


def case_compile_modes():
    """RILL_GRAPH_COMPILE_MODE=naive and separate give each rank the same plan (ids canonicalised) and the same
    losses, bit for bit, over 10 steps of a hybrid step (data-parallel first layer, tensor-parallel pair, a stage
    change); every id of a rank's plan is in its segment; an error compiling on the master reaches every rank."""
    import os
    n, r = dist.get_world_size(), dist.get_rank()
    pl, last = world(), rill.placement("cpu", ranks=[n - 1])

    def hybrid():
        rill.manual_seed(11)
        m = nn.Sequential(nn.Linear(8, 24), nn.ReLU(), nn.Linear(24, 24), nn.Tanh(), nn.Linear(24, 4))
        m[0].to_global(pl, B)
        m[2].weight = nn.Parameter(m[2].weight.detach().to_global(pl, B))  # made split below, by rows
        k = 24 // n
        m[2].weight = nn.Parameter(m[2].weight.to_local()[r * k:(r + 1) * k].clone().to_global(pl, S0))
        m[2].bias = nn.Parameter(m[2].bias.detach()[r * k:(r + 1) * k].clone().to_global(pl, S0))
        m[4].to_global(last, B)
        return m, MovedStep(m, rill.optim.Adam(m.parameters(), lr=0.01), last)

    def inputs(x, y):
        return rill.tensor(x[2 * r:2 * r + 2]).to_global(pl, S0), rill.tensor(y).to_global(last, B)

    def run(mode):
        os.environ["RILL_GRAPH_COMPILE_MODE"] = mode
        m, g = hybrid()
        losses = []
        for x, y in data(10, 2 * n):
            loss = g(*inputs(x, y))
            losses.append(loss.to_local().item() if r == n - 1 else None)
        return g.plan(), losses, g.stats()

    try:
        naive_plan, naive_losses, naive_stats = run("naive")
        sep_plan, sep_losses, sep_stats = run("separate")
    finally:
        os.environ.pop("RILL_GRAPH_COMPILE_MODE", None)
    assert naive_stats["compile_mode"] == "naive" and sep_stats["compile_mode"] == "separate"
    assert canonical_plan(naive_plan) == canonical_plan(sep_plan)
    assert naive_losses == sep_losses, (naive_losses, sep_losses)
    assert sep_plan["rank"] == r and sep_plan["tasks"]
    for item in sep_plan["tasks"] + sep_plan["regsts"] + sep_plan["mem_blocks"] + sep_plan["chunks"]:
        assert item["id"] >> 48 == r, (item, r)
    for stats in (naive_stats, sep_stats):
        assert stats["plan_bytes"] > 0 and stats["compile_cpu_s"] >= 0
        assert (stats["master_bytes_sent"] > 0) == (r == 0), stats
    # the master does every rank's compile in naive mode: it sends plans, the separate master one job per rank
    if r == 0:
        assert naive_stats["compile_cpu_s"] > 0 and sep_stats["compile_cpu_s"] > 0
    # a simulated world (one process, no communication) compiles this rank's plan as the real one did
    from rill.graph import simulated_world
    with simulated_world(n):
        pl, last = world(), rill.placement("cpu", ranks=[n - 1])
        _, g = hybrid()
        job = g._traced_job(*inputs(*data(1, 2 * n)[0]))
    job.make_logical()
    assert canonical_plan(job.compile_rank(r).plan_dict()) == canonical_plan(sep_plan)
    pl, last = world(), rill.placement("cpu", ranks=[n - 1])

    class Uneven(nn.Graph):
        def build(self, x):
            return x.to_global(sbp=S1) * 2  # 5 columns over n ranks: the master's logical passes refuse it

    try:
        Uneven()(rill.ones(2, 5).to_global(pl, B))
        raise AssertionError("an uneven split compiled")
    except (RuntimeError, ValueError) as e:
        want = "cannot be split" if r == 0 else "rank 0 (the master) failed to compile the graph"
        assert want in str(e), e
    # a rank that fails alone: every other rank raises too, rather than wait for it in the first launch
    from rill import graph as graph_compile
    compile_own_part = graph_compile._worker
    if r == n - 1:
        def broken(*args):
            raise RuntimeError("this rank's part cannot be compiled")
        graph_compile._worker = broken
    try:
        os.environ["RILL_GRAPH_COMPILE_MODE"] = "separate"
        _, g = hybrid()
        g(*inputs(*data(1, 2 * n)[0]))
        raise AssertionError("a graph one rank could not compile ran")
    except RuntimeError as e:
        want = "this rank's part cannot be compiled" if r == n - 1 else f"rank {n - 1} failed to compile its part"
        assert want in str(e), e
    finally:
        graph_compile._worker = compile_own_part
        os.environ.pop("RILL_GRAPH_COMPILE_MODE", None)


if __name__ == "__main__":
    from distributed_worker import run_cases  # this file's folder is sys.path[0]
    run_cases(globals())

