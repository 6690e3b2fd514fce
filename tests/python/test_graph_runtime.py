"""Graph mode's runtime side (docs/graph.md): random ops under gradient accumulation, the actors' Chrome trace
(RILL_GRAPH_TRACE) and the lr schedulers stepped inside the graph."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import rill
import rill.nn as nn
from rill._generator import core_random_ops


def _data(n, seed=1, features=32, classes=10):
    rng = np.random.default_rng(seed)
    x = rill.tensor(rng.standard_normal((n, features)).astype(np.float32))
    y = rill.tensor(rng.integers(0, classes, n).astype(np.int64))
    return x, y


def _assert_params_close(eager_model, graph_model, rtol=1e-4):
    for (name, p), q in zip(eager_model.named_parameters(), graph_model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=rtol, atol=1e-6, err_msg=name)


# --- random ops under gradient accumulation ----------------------------------------------------------------------

def _dropout_mlp(seed=0):
    rill.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10))


class _DropoutGraph(nn.Graph):
    """A training step that also returns dropout applied to its third input (ones): the mean of the pieces'
    masks, times 1 / (1 - p)."""

    def __init__(self, model, opt, accumulation):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.drop = nn.Dropout(0.5)
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps(accumulation)

    def build(self, x, y, ones):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss, self.drop(ones)


def _eager_accumulated_step(model, opt, drop, x, y, ones, pieces):
    """What a graph call with `pieces` micro-batches does, eagerly: the micro-batches one after the other."""
    loss_fn = nn.CrossEntropyLoss()
    opt.zero_grad()
    n = x.shape[0] // pieces
    losses, masks = [], []
    for k in range(pieces):
        part = slice(k * n, (k + 1) * n)
        loss = loss_fn(model(x[part]), y[part])
        (loss / pieces).backward()
        losses.append(loss.item())
        masks.append(drop(ones[part]).numpy())
    opt.step()
    return float(np.mean(losses)), np.mean(masks, axis=0), masks


def test_dropout_under_accumulation_equals_eager_micro_batches():
    pieces, batch = 4, 64
    eager, graph_model = _dropout_mlp(), _dropout_mlp()
    e_opt = rill.optim.SGD(eager.parameters(), lr=0.1)
    g_opt = rill.optim.SGD(graph_model.parameters(), lr=0.1)
    graph = _DropoutGraph(graph_model, g_opt, pieces)
    e_drop = nn.Dropout(0.5)
    ones = rill.ones(batch, 16)
    # The first call compiles (tracing draws the first piece's numbers) and uses what the trace drew. Graph mode
    # draws from the core's Philox generator: the eager reference does too (core_random_ops).
    for step in range(5):
        x, y = _data(batch, seed=50 + step)
        rill.manual_seed(1000 + step)
        with core_random_ops():
            e_loss, e_mask, masks = _eager_accumulated_step(eager, e_opt, e_drop, x, y, ones, pieces)
            e_next = rill.rand(8).numpy()  # the generator after the step
        rill.manual_seed(1000 + step)
        g_loss, g_mask = graph(x, y, ones)
        with core_random_ops():
            g_next = rill.rand(8).numpy()
        assert abs(g_loss.item() - e_loss) <= 1e-5 * abs(e_loss)
        np.testing.assert_allclose(g_mask.numpy(), e_mask, rtol=1e-6)
        np.testing.assert_array_equal(g_next, e_next)  # the launch took as many numbers as the four pieces
        assert not all(np.array_equal(masks[0], m) for m in masks[1:]), "eager's micro-batches drew the same mask"
        # One mask for every piece would make the graph's mean 0 or 2 everywhere.
        assert not np.isin(g_mask.numpy(), [0.0, 2.0]).all(), "the graph's pieces drew the same mask"
    _assert_params_close(eager, graph_model, rtol=1e-5)


# --- the actors' trace (RILL_GRAPH_TRACE) ------------------------------------------------------------------------

_TRACED_SCRIPT = """
import numpy as np, rill, rill.nn as nn
rill.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = rill.optim.SGD(model.parameters(), lr=0.1)

class Step(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps({pieces})

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss

g = Step()
x = rill.tensor(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32))
y = rill.tensor(np.arange(8) % 4)
for _ in range({iterations}):
    g(x, y)
print("TASKS", ",".join(op["name"] for op in g.job()["ops"]))
"""


def _site_flags():
    # -S only when this interpreter runs without site: an editable install is found through site.
    return ["-S"] if sys.flags.no_site else []


def _traced_run(tmp_path, pieces, iterations):
    path = tmp_path / "graph_trace.json"
    env = dict(os.environ, RILL_GRAPH_TRACE=str(path), PYTHONPATH=os.pathsep.join(sys.path))
    script = textwrap.dedent(_TRACED_SCRIPT.format(pieces=pieces, iterations=iterations))
    done = subprocess.run([sys.executable, *_site_flags(), "-c", script], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    tasks = done.stdout.split("TASKS ")[1].strip().split(",")
    with open(path) as f:
        trace = json.load(f)
    return trace["traceEvents"], tasks


def test_graph_trace_has_one_event_per_kernel_task_per_iteration(tmp_path):
    events, ops = _traced_run(tmp_path, pieces=1, iterations=3)
    kernels = [e for e in events if e["ph"] == "X"]
    names = {e["name"] for e in kernels}
    assert names and names <= set(ops)  # every event is a task of the job, named after its op
    for name in names:
        mine = [e for e in kernels if e["name"] == name]
        assert sorted(e["args"]["iteration"] for e in mine) == [0, 1, 2], name
        assert all(e["args"]["piece"] == 0 and e["args"]["graph"] == "Step" for e in mine)
    assert any(e["cat"] == "matmul" for e in kernels) or any("linear" in e["cat"] for e in kernels)
    for e in kernels:
        assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["tid"], int) and e["cat"] == e["args"]["op"]
    threads = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in kernels} <= threads  # each actor thread is named
    # Every iteration runs the same kernels (and the optimizer's update of each parameter).
    per_iteration = [sum(e["args"]["iteration"] == i for e in kernels) for i in range(3)]
    assert per_iteration[0] == per_iteration[1] == per_iteration[2] >= 4


def test_graph_trace_numbers_the_pieces_of_an_iteration(tmp_path):
    events, _ = _traced_run(tmp_path, pieces=2, iterations=2)
    kernels = [e for e in events if e["ph"] == "X"]
    pieces = {}
    for e in kernels:
        pieces.setdefault((e["name"], e["args"]["iteration"]), []).append(e["args"]["piece"])
    # Forward and backward tasks run once per piece, the optimizer's once per iteration.
    assert any(sorted(p) == [0, 1] for p in pieces.values())
    assert any(p == [0] for p in pieces.values())
    for (name, it), p in pieces.items():
        assert sorted(p) in ([0], [0, 1]), (name, it, p)


def test_graph_trace_is_off_without_the_variable(monkeypatch):
    monkeypatch.delenv("RILL_GRAPH_TRACE", raising=False)
    done = subprocess.run([sys.executable, *_site_flags(), "-c", textwrap.dedent(_TRACED_SCRIPT.format(pieces=1, iterations=2))
                           + "print('WRITTEN', nn.Graph.write_trace())"],
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "WRITTEN 0" in done.stdout


# --- lr schedulers stepped inside the graph ----------------------------------------------------------------------

class _TrainGraph(nn.Graph):
    def __init__(self, model, opt, sched):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt, lr_sch=sched)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def _mlp(seed=3):
    rill.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))


_S = rill.optim.lr_scheduler
_SCHEDULES = {
    "step": lambda o: _S.StepLR(o, step_size=4, gamma=0.5),
    "multistep": lambda o: _S.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "exponential": lambda o: _S.ExponentialLR(o, gamma=0.9),
    "cosine": lambda o: _S.CosineAnnealingLR(o, T_max=10, eta_min=1e-3),
    "linear": lambda o: _S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=8),
    "constant": lambda o: _S.ConstantLR(o, factor=0.5, total_iters=6),
    "chained": lambda o: _S.ChainedScheduler([_S.LinearLR(o, start_factor=0.5, total_iters=5),
                                              _S.ExponentialLR(o, gamma=0.95)]),
}


def _two_groups_sgd(model):
    params = list(model.parameters())
    return rill.optim.SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.05}], lr=0.1, momentum=0.9)


def _train_both(make_schedule, steps=30):
    eager, graph_model = _mlp(), _mlp()
    e_opt, g_opt = _two_groups_sgd(eager), _two_groups_sgd(graph_model)
    e_sched, g_sched = make_schedule(e_opt), make_schedule(g_opt)
    graph = _TrainGraph(graph_model, g_opt, g_sched)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        x, y = _data(16, seed=step)
        e_opt.zero_grad()
        e_loss = loss_fn(eager(x), y)
        e_loss.backward()
        e_opt.step()
        e_sched.step()
        g_loss = graph(x, y).item()
        np.testing.assert_allclose(g_loss, e_loss.item(), rtol=1e-6, err_msg=f"step {step}")
        np.testing.assert_allclose(g_sched.get_last_lr(), e_sched.get_last_lr(), rtol=1e-6, err_msg=f"step {step}")
        assert [g["lr"] for g in g_opt.param_groups] == g_sched.get_last_lr()
    _assert_params_close(eager, graph_model, rtol=1e-5)
    return graph, g_sched, e_sched


def test_closed_form_schedules_step_inside_the_graph():
    for name, make in _SCHEDULES.items():
        graph, g_sched, e_sched = _train_both(make)
        assert g_sched.last_epoch == e_sched.last_epoch == 30, name
        variables = {op["name"] for op in graph.job()["ops"] if op["op_type"] == "variable"}
        # The schedule's epoch is a variable of the plan; no lr is fed from the host.
        assert "optimizer0.lr_scheduler.epoch" in variables, (name, sorted(variables))
        assert not any(v.startswith("optimizer0.group") for v in variables), (name, sorted(variables))
        fresh = make(_two_groups_sgd(_mlp()))  # the host object's state round-trips
        fresh.load_state_dict(g_sched.state_dict())
        assert fresh.last_epoch == 30 and fresh.get_last_lr() == g_sched.get_last_lr(), name


def test_host_schedules_keep_feeding_the_lr(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="rill.nn.Graph"):
        graph, _, _ = _train_both(lambda o: _S.LambdaLR(o, lambda e: 1.0 / (1 + e)), steps=10)
    assert any("LambdaLR" in r.getMessage() and "host" in r.getMessage() for r in caplog.records)
    variables = {op["name"] for op in graph.job()["ops"] if op["op_type"] == "variable"}
    assert "optimizer0.group0.lr" in variables


def test_a_subclass_overriding_get_lr_steps_on_the_host():
    class Halving(_S.StepLR):
        def get_lr(self):
            return [g["lr"] * 0.5 for g in self.optimizer.param_groups]
    graph, _, _ = _train_both(lambda o: Halving(o, step_size=3), steps=6)
    variables = {op["name"] for op in graph.job()["ops"] if op["op_type"] == "variable"}
    assert "optimizer0.lr_scheduler.epoch" not in variables


def test_eager_steps_and_state_dict_between_graph_calls(tmp_path):
    model = _mlp()
    opt = _two_groups_sgd(model)
    sched = _S.StepLR(opt, step_size=2, gamma=0.5)
    graph = _TrainGraph(model, opt, sched)
    ref_model = _mlp()
    ref_opt = _two_groups_sgd(ref_model)
    ref_sched = _S.StepLR(ref_opt, step_size=2, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()

    def eager_step(m, o, s, x, y):
        o.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        o.step()
        s.step()
        return loss.item()

    losses, ref = [], []
    for step in range(9):
        x, y = _data(16, seed=step)
        if step in (3, 4):  # eager steps in between move the schedule: the graph follows them
            losses.append(eager_step(model, opt, sched, x, y))
        else:
            losses.append(graph(x, y).item())
        ref.append(eager_step(ref_model, ref_opt, ref_sched, x, y))
        if step == 5:
            path = tmp_path / "graph.pt"
            rill.save(graph.state_dict(), path)
    np.testing.assert_allclose(losses, ref, rtol=1e-5)
    assert sched.get_last_lr() == ref_sched.get_last_lr()
    # Back to the state after step 5: the schedule's epoch and lr with it.
    graph.load_state_dict(rill.load(path))
    assert sched.last_epoch == 6
    x, y = _data(16, seed=6)
    graph(x, y)
    assert sched.last_epoch == 7
    np.testing.assert_allclose(sched.get_last_lr(), [0.1 * 0.5 ** 3, 0.05 * 0.5 ** 3])
    state = sched.state_dict()
    fresh = _S.StepLR(_two_groups_sgd(_mlp()), step_size=2, gamma=0.5)
    fresh.load_state_dict(state)
    assert fresh.get_last_lr() == sched.get_last_lr() and fresh.last_epoch == 7
