"""Graph mode (rill.nn.Graph): training in a graph equals eager training; the job, its passes, the plan and the
actor runtime behind one VM instruction; errors, recompilation and the tools."""
import logging

import numpy as np
import pytest

import rill
import rill.nn as nn


def _mlp(seed=0):
    rill.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def _data(n, seed=1, features=64, classes=10):
    rng = np.random.default_rng(seed)
    x = rill.tensor(rng.standard_normal((n, features)).astype(np.float32))
    y = rill.tensor(rng.integers(0, classes, n).astype(np.int64))
    return x, y


class _TrainGraph(nn.Graph):
    def __init__(self, model, opt, sched=None, accumulation=1):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt, lr_sch=sched)
        self.config.set_gradient_accumulation_steps(accumulation)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def _eager_losses(model, opt, batches, sched=None):
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return losses


def _graph_losses(graph, batches):
    return [graph(x, y).item() for x, y in batches]


def _assert_same_training(eager_model, graph_model, eager_losses, graph_losses):
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5, atol=1e-7)
    for (name, p), q in zip(eager_model.named_parameters(), graph_model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_mlp_adam_200_steps_equal_eager():
    eager, graph_model = _mlp(), _mlp()
    batches = [_data(32, seed=s) for s in range(200)]
    e_opt = rill.optim.Adam(eager.parameters(), lr=1e-3)
    g_opt = rill.optim.Adam(graph_model.parameters(), lr=1e-3)
    e = _eager_losses(eager, e_opt, batches)
    g = _graph_losses(_TrainGraph(graph_model, g_opt), batches)
    _assert_same_training(eager, graph_model, e, g)


def test_cnn_sgd_momentum_equal_eager():
    def cnn():
        rill.manual_seed(3)
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                             nn.ReLU(), nn.Flatten(), nn.Linear(16 * 2 * 2, 10))
    eager, graph_model = cnn(), cnn()
    rng = np.random.default_rng(5)
    batches = [(rill.tensor(rng.standard_normal((16, 1, 8, 8)).astype(np.float32)),
                rill.tensor(rng.integers(0, 10, 16).astype(np.int64))) for _ in range(30)]
    kw = dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    e = _eager_losses(eager, rill.optim.SGD(eager.parameters(), **kw), batches)
    g = _graph_losses(_TrainGraph(graph_model, rill.optim.SGD(graph_model.parameters(), **kw)), batches)
    _assert_same_training(eager, graph_model, e, g)


def test_encoder_layer_adamw_equal_eager():
    def layer():
        rill.manual_seed(7)
        return nn.Sequential(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), nn.Flatten(),
                             nn.Linear(8 * 32, 10))
    eager, graph_model = layer(), layer()
    rng = np.random.default_rng(9)
    batches = [(rill.tensor(rng.standard_normal((4, 8, 32)).astype(np.float32)),
                rill.tensor(rng.integers(0, 10, 4).astype(np.int64))) for _ in range(10)]
    e = _eager_losses(eager, rill.optim.AdamW(eager.parameters(), lr=1e-3), batches)
    g = _graph_losses(_TrainGraph(graph_model, rill.optim.AdamW(graph_model.parameters(), lr=1e-3)), batches)
    _assert_same_training(eager, graph_model, e, g)


class _PartialWrites(nn.Module):
    """Writes into parts of tensors in its forward: a slice of a fresh tensor, an in-place op on a column, a
    select of a buffer (a count of the calls, as BatchNorm's num_batches_tracked but in one element)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 10)
        self.register_buffer("calls", rill.zeros(3))

    def forward(self, x):
        h = x.clone()
        h[:, :8] = 0.0
        h[:, 8:16].mul_(2.0)
        h[1] = h[0] + h[2]
        self.calls[1] += 1.0
        return self.linear(h)


def test_writes_into_parts_of_tensors_equal_eager():
    def model():
        rill.manual_seed(4)
        return _PartialWrites()
    eager, graph_model = model(), model()
    batches = [_data(8, seed=s) for s in range(12)]
    e = _eager_losses(eager, rill.optim.SGD(eager.parameters(), lr=0.1), batches)
    graph = _TrainGraph(graph_model, rill.optim.SGD(graph_model.parameters(), lr=0.1))
    g = _graph_losses(graph, batches)
    _assert_same_training(eager, graph_model, e, g)
    assert graph_model.calls.tolist() == eager.calls.tolist() == [0.0, 12.0, 0.0]
    assert any(op["op_type"] == "restride_scatter" for op in graph.job()["ops"])


def test_write_into_part_of_empty_inside_build():
    class G(nn.Graph):
        def build(self, x):
            h = rill.empty(3, 4)
            h[0] = x
            h[1:].fill_(2.0)
            return h

    g = G()
    for v in (1.0, 5.0):
        assert g(rill.full((4,), v)).tolist() == [[v] * 4, [2.0] * 4, [2.0] * 4]


def test_a_copy_of_a_traced_value_is_that_value_and_a_copy_of_a_binding_stays_a_cast():
    # Note [A copy is its source's blob] (tracer.cpp): clone() and copy_ of a whole traced value of the same meta
    # add no op; a copy of a variable or an input is a cast, so no assign writes one binding into another.
    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(rill.zeros(4), requires_grad=False)
            self.b = nn.Parameter(rill.zeros(4), requires_grad=False)

        def build(self, x):
            y = (x * 2).clone()
            y.add_(1)                  # writes the clone's memory: x * 2 keeps its value
            self.a.copy_(x * 3)        # a traced value: the assign reads it directly
            self.b.copy_(self.a)       # a variable's value: a cast
            z = x.clone()              # an input: a cast
            return y, x * 2, z

    g = G()
    for k in range(3):
        x = rill.full((4,), float(k))
        y, twice, z = g(x)
        assert y.tolist() == [2.0 * k + 1] * 4 and twice.tolist() == [2.0 * k] * 4 and z.tolist() == [float(k)] * 4
        assert g.a.tolist() == [3.0 * k] * 4 and g.b.tolist() == [3.0 * k] * 4
    g.config.enable_pass("redundant_cast_elimination", False)
    g.config.enable_pass("fuse_elementwise", False)
    y, twice, z = g(rill.full((4,), 5.0))
    assert y.tolist() == [11.0] * 4 and twice.tolist() == [10.0] * 4 and z.tolist() == [5.0] * 4
    assert g.a.tolist() == [15.0] * 4 and g.b.tolist() == [15.0] * 4
    casts = [op for op in g.job()["ops"] if op["op_type"] == "cast"]
    assert len(casts) == 2, [op["inputs"] for op in casts]  # b's copy of a and the clone of the input


def test_rmsprop_and_scheduler_equal_eager():
    eager, graph_model = _mlp(2), _mlp(2)
    batches = [_data(16, seed=s) for s in range(20)]
    e_opt = rill.optim.RMSprop(eager.parameters(), lr=1e-3, momentum=0.5)
    g_opt = rill.optim.RMSprop(graph_model.parameters(), lr=1e-3, momentum=0.5)
    e_sched = rill.optim.lr_scheduler.StepLR(e_opt, step_size=5, gamma=0.5)
    g_sched = rill.optim.lr_scheduler.StepLR(g_opt, step_size=5, gamma=0.5)
    e = _eager_losses(eager, e_opt, batches, e_sched)
    g = _graph_losses(_TrainGraph(graph_model, g_opt, g_sched), batches)
    _assert_same_training(eager, graph_model, e, g)
    assert g_opt.param_groups[0]["lr"] == e_opt.param_groups[0]["lr"]


def test_gradient_accumulation_4_equals_eager_batch_64():
    eager, graph_model = _mlp(4), _mlp(4)
    batches = [_data(64, seed=100 + s) for s in range(10)]
    e = _eager_losses(eager, rill.optim.SGD(eager.parameters(), lr=0.1), batches)
    graph = _TrainGraph(graph_model, rill.optim.SGD(graph_model.parameters(), lr=0.1), accumulation=4)
    g = _graph_losses(graph, batches)
    _assert_same_training(eager, graph_model, e, g)
    assert "gradient_accumulation" in graph.job()["pass_order"]


def _bn_mlp(seed):
    rill.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))


def test_buffers_written_per_micro_batch_equal_eager_micro_batches():
    # BatchNorm's running stats are written by each micro-batch in turn, as eager's micro-batches write them, not
    # once from the mean of their writes (Note [Orders carried from piece to piece] in passes/auto_tick.cpp).
    eager, graph_model = _bn_mlp(6), _bn_mlp(6)
    batches = [_data(32, seed=200 + s) for s in range(5)]
    opt = rill.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    e = []
    for x, y in batches:
        opt.zero_grad()
        total = 0.0
        for xp, yp in zip(x.chunk(4), y.chunk(4)):
            loss = loss_fn(eager(xp), yp) / 4
            loss.backward()
            total += loss.item()
        opt.step()
        e.append(total)
    graph = _TrainGraph(graph_model, rill.optim.SGD(graph_model.parameters(), lr=0.1, momentum=0.9), accumulation=4)
    g = _graph_losses(graph, batches)
    _assert_same_training(eager, graph_model, e, g)
    for name, b in eager.named_buffers():
        np.testing.assert_allclose(dict(graph_model.named_buffers())[name].numpy(), b.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    assert graph_model[1].num_batches_tracked.item() == 4 * len(batches)
    assert "lags(" in graph.plan_str()  # the readers of the running stats wait for the last micro-batch's write


class _SspGraph(_TrainGraph):
    def __init__(self, model, opt, sched=None, micro=4):
        super().__init__(model, opt, sched, micro)
        self.config.enable_ssp(True)


def test_ssp_without_stages_is_a_step_per_micro_batch():
    # Note [SSP] in passes/ssp.cpp: each micro-batch is an optimizer and scheduler step; with one stage every
    # step's weights are current, so it equals eager stepping on each micro-batch.
    eager, graph_model = _bn_mlp(7), _bn_mlp(7)
    batches = [_data(32, seed=300 + s) for s in range(4)]
    e_opt = rill.optim.Adam(eager.parameters(), lr=1e-2)
    g_opt = rill.optim.Adam(graph_model.parameters(), lr=1e-2)
    e_sched = rill.optim.lr_scheduler.StepLR(e_opt, step_size=3, gamma=0.5)
    g_sched = rill.optim.lr_scheduler.StepLR(g_opt, step_size=3, gamma=0.5)
    e = _eager_losses(eager, e_opt, [(xp, yp) for x, y in batches for xp, yp in zip(x.chunk(4), y.chunk(4))],
                      e_sched)
    graph = _SspGraph(graph_model, g_opt, g_sched)
    g = _graph_losses(graph, batches)
    np.testing.assert_allclose(g, np.mean(np.reshape(e, (len(batches), 4)), axis=1), rtol=1e-5)
    _assert_same_training(eager, graph_model, [], [])
    assert g_opt.param_groups[0]["lr"] == e_opt.param_groups[0]["lr"] == 1e-2 * 0.5 ** 5
    ssp = graph.stats()["ssp"]
    assert ssp["bound"] == {0: 0} and ssp["max_staleness"] == {0: 0} and ssp["staleness"] == {0: [0] * 4}
    assert sorted(ssp["variables"]) == ["model.0.bias", "model.0.weight", "model.1.bias", "model.1.weight",
                                        "model.3.bias", "model.3.weight"]
    assert sum(op["op_type"] == "_ssp_variable_proxy" for op in graph.job()["ops"]) == 6


def test_ssp_needs_an_optimizer_micro_batches_and_a_schedule_in_the_graph():
    class Forward(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model
            self.config.set_gradient_accumulation_steps(2)
            self.config.enable_ssp(True)

        def build(self, x):
            return self.model(x)

    x, y = _data(8)
    with pytest.raises(ValueError, match="add_optimizer"):
        Forward(_mlp())(x)
    model = _mlp()
    with pytest.raises(ValueError, match="it is 1"):
        _SspGraph(model, rill.optim.SGD(model.parameters(), lr=0.1), micro=1)(x, y)
    class HostSchedule(rill.optim.lr_scheduler.LambdaLR):  # its own class: nn.Graph logs each class once
        pass

    opt = rill.optim.SGD(model.parameters(), lr=0.1)
    sched = HostSchedule(opt, lambda e: 0.9 ** e)
    with pytest.raises(ValueError, match="HostSchedule has no closed form"):
        _SspGraph(model, opt, sched)(x, y)


def test_config_turns_an_optional_pass_off_and_compiles_a_new_plan():
    class G(rill.nn.Graph):
        def build(self, x):
            return (x * 2 + 1) + (x * 2 + 1)  # CSE merges the second x * 2 + 1
    g = G()
    g.config.enable_pass("fuse_elementwise", False)  # else every op is in one fused op either way
    x = rill.arange(4.0)
    assert g(x).tolist() == [2.0, 6.0, 10.0, 14.0]
    assert "common_subexpression_elimination" in g.job()["pass_order"]
    merged = len(g.job()["ops"])
    assert "common_subexpression_elimination" in g.config.optional_passes()
    g.config.enable_pass("common_subexpression_elimination", False)
    assert g(x).tolist() == [2.0, 6.0, 10.0, 14.0]
    assert g.stats()["compiles"] == 2
    job = g.job()
    assert "common_subexpression_elimination" not in job["pass_order"]
    assert job["disabled_passes"] == ["common_subexpression_elimination", "fuse_elementwise"]
    assert len(job["ops"]) > merged
    with pytest.raises(ValueError, match="no optional pass is named 'auto_tick'"):
        g.config.enable_pass("auto_tick", False)


def test_memory_plan_reuses_dead_buffers_near_the_lower_bound_and_can_be_turned_off():
    def encoder_step(reuse):
        rill.manual_seed(7)
        model = nn.Sequential(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                              nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), nn.Flatten(),
                              nn.Linear(8 * 32, 10))
        g = _TrainGraph(model, rill.optim.AdamW(model.parameters(), lr=1e-3))
        g.config.enable_pass("memory_reuse", reuse)
        rng = np.random.default_rng(9)
        batches = [(rill.tensor(rng.standard_normal((4, 8, 32)).astype(np.float32)),
                    rill.tensor(rng.integers(0, 10, 4).astype(np.int64))) for _ in range(3)]
        return _graph_losses(g, batches), g.stats()
    losses, stats = encoder_step(True)
    alone, stats_alone = encoder_step(False)
    assert losses == alone  # the same kernels on the same values, wherever their buffers are
    bound = stats["memory_lower_bound_bytes"]
    assert bound == stats_alone["memory_lower_bound_bytes"] > 0
    assert bound <= stats["planned_peak_bytes"] <= 1.05 * bound, stats
    assert stats_alone["planned_peak_bytes"] > 2 * stats["planned_peak_bytes"], (stats, stats_alone)


class _Scaled(nn.Module):
    """An elementwise tail the tracer records op by op: x * scale + shift, through a sigmoid gate."""

    def __init__(self, n):
        super().__init__()
        self.shift = nn.Parameter(rill.zeros(n))

    def forward(self, x):
        return (x * 0.5 + self.shift) * rill.sigmoid(x) - x.abs() / 4


def test_fuse_elementwise_trains_as_unfused_and_as_eager_and_can_be_turned_off():
    def model():
        rill.manual_seed(11)
        return nn.Sequential(nn.Linear(64, 96), nn.GELU(approximate="tanh"), _Scaled(96), nn.Linear(96, 96),
                             nn.Tanh(), nn.Linear(96, 10))
    batches = [_data(24, seed=s) for s in range(20)]

    def graph_run(fuse):
        m = model()
        g = _TrainGraph(m, rill.optim.AdamW(m.parameters(), lr=1e-3))
        g.config.enable_pass("fuse_elementwise", fuse)
        return m, _graph_losses(g, batches), g.stats()
    fused_model, fused_losses, fused = graph_run(True)
    plain_model, plain_losses, plain = graph_run(False)
    eager_model = model()
    eager_losses = _eager_losses(eager_model, rill.optim.AdamW(eager_model.parameters(), lr=1e-3), batches)
    assert fused["fused_kernels"] >= 3 and fused["fused_ops"] >= 3 * fused["fused_kernels"] - 3, fused
    assert plain["fused_kernels"] == 0 and plain["fused_ops"] == 0
    # Every fused op stands for its chain: tasks go down by what the chains held, less one task each.
    assert fused["plan_tasks"] == plain["plan_tasks"] - fused["fused_ops"] + fused["fused_kernels"], (fused, plain)
    _assert_same_training(plain_model, fused_model, plain_losses, fused_losses)
    _assert_same_training(eager_model, fused_model, eager_losses, fused_losses)


def test_fuse_activation_trains_as_unfused_and_can_be_turned_off():
    """A linear and the activation that alone reads it become one _linear_activation op: in training tanh and
    sigmoid (their gradients read their output), in inference relu, gelu and silu too (relu's mask is cheaper made
    in the forward; gelu's and silu's gradients read the linear's output). The fused kernel runs the unfused ops'
    kernels, so training is the same bit for bit."""
    def model():
        rill.manual_seed(12)
        return nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 96), nn.Tanh(), nn.Linear(96, 48),
                             nn.Sigmoid(), nn.Linear(48, 48), nn.GELU(), nn.Linear(48, 10))
    batches = [_data(24, seed=s) for s in range(10)]

    def run(fuse):
        m = model()
        g = _TrainGraph(m, rill.optim.Adam(m.parameters(), lr=1e-3))
        g.config.enable_pass("fuse_activation", fuse)
        losses = _graph_losses(g, batches)
        fused = [op["attrs"]["activation"] for op in g.job()["ops"] if op["op_type"] == "_linear_activation"]
        return m, losses, fused, g.stats()["plan_tasks"]
    m_on, l_on, fused, tasks_on = run(True)
    m_off, l_off, unfused, tasks_off = run(False)
    assert sorted(fused) == ["sigmoid", "tanh"] and unfused == []
    assert tasks_on < tasks_off
    assert l_on == l_off
    for p, q in zip(m_on.parameters(), m_off.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())

    class Infer(nn.Graph):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)
    rill.manual_seed(13)
    m = nn.Sequential(nn.Linear(64, 96), nn.GELU(approximate="tanh"), nn.Linear(96, 32), nn.SiLU(),
                      nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 8), nn.GELU())
    m.eval()
    g = Infer(m)
    x = _data(5, seed=3)[0]
    np.testing.assert_array_equal(g(x).numpy(), m(x).detach().numpy())
    fused = [(op["attrs"]["activation"], op["attrs"]["approximate"]) for op in g.job()["ops"]
             if op["op_type"] == "_linear_activation"]
    assert fused == [("gelu", "tanh"), ("silu", "none"), ("relu", "none"), ("gelu", "none")]


def _small_cnn(seed, last_activation):
    rill.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1),
                         last_activation(), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))


def _cnn_runs(make_model, name, probe, seed):
    """make_model()'s graph trained 8 SGD-momentum steps with pass `name` on, then off: for each, the model, the
    losses and probe(the job's ops)."""
    rng = np.random.default_rng(seed)
    batches = [(rill.tensor(rng.standard_normal((6, 1, 8, 8)).astype(np.float32)),
                rill.tensor(rng.integers(0, 10, 6))) for _ in range(8)]
    runs = []
    for on in (True, False):
        m = make_model()
        g = _TrainGraph(m, rill.optim.SGD(m.parameters(), lr=0.05, momentum=0.9))
        g.config.enable_pass(name, on)
        losses = _graph_losses(g, batches)
        runs.append((m, losses, probe(g.job()["ops"])))
    return runs, batches


def test_fuse_activation_fuses_convolutions_and_trains_as_unfused():
    """A conv2d and its tanh (in training; its relu in inference) are one _conv2d_activation op, the unfused ops'
    kernels in one task."""
    runs, _ = _cnn_runs(lambda: _small_cnn(14, nn.Tanh), "fuse_activation",
                        lambda ops: [op["attrs"]["activation"] for op in ops if op["op_type"] == "_conv2d_activation"], 5)
    (m_on, l_on, fused), (m_off, l_off, unfused) = runs
    assert fused == ["tanh"] and unfused == []
    assert l_on == l_off
    for p, q in zip(m_on.parameters(), m_off.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_fuse_bias_gradient_computes_both_conv_gradients_in_one_task():
    """A conv2d_backward_weight and its grad_output's sum over dims 0, 2, 3 (the bias's gradient) are one
    _conv2d_backward_weight_bias op; training equals the unfused graph and eager within float rounding."""
    runs, batches = _cnn_runs(lambda: _small_cnn(16, nn.ReLU), "fuse_bias_gradient",
                              lambda ops: sum(op["op_type"] == "_conv2d_backward_weight_bias" for op in ops), 8)
    (m_on, l_on, fused), (m_off, l_off, unfused) = runs
    assert fused == 2 and unfused == 0
    _assert_same_training(m_off, m_on, l_off, l_on)
    m_eager = _small_cnn(16, nn.ReLU)
    _assert_same_training(m_eager, m_on, _eager_losses(m_eager, rill.optim.SGD(m_eager.parameters(), lr=0.05,
                                                                               momentum=0.9), batches), l_on)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_backward_weight_bias_op_equals_torch(dtype):
    import torch
    rng = np.random.default_rng(9)
    x, w, gy = (rng.standard_normal(s).astype(dtype) for s in ((3, 4, 9, 7), (6, 2, 3, 3), (3, 6, 5, 7)))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = torch.zeros(6, dtype=tw.dtype, requires_grad=True)
    torch.nn.functional.conv2d(torch.nn.functional.pad(tx, (1, 1, 1, 1)), tw, tb, stride=(2, 1), dilation=(1, 1),
                               groups=2).backward(torch.tensor(gy))
    dw, db = rill._conv2d_backward_weight_bias(rill.tensor(gy), rill.tensor(x), [6, 2, 3, 3], [2, 1], [1, 1, 1, 1],
                                                [1, 1], 2)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(dw.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(db.numpy(), tb.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("act", ["relu", "tanh", "sigmoid", "silu", "gelu"])
def test_conv2d_activation_op_equals_conv2d_then_the_activation(act):
    import torch
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4, 9, 7), (6, 4, 3, 3), (6,)))
    x[0, 0, 0, 0] = np.nan
    torch_act = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu,
                 "gelu": torch.nn.functional.gelu}[act]
    for bias in (b, None):
        out = rill._conv2d_activation(rill.tensor(x), rill.tensor(w), None if bias is None else rill.tensor(bias),
                                      [2, 1], [1, 1, 0, 2], [1, 1], 1, activation=act)
        want = torch_act(torch.nn.functional.conv2d(torch.nn.functional.pad(torch.tensor(x), (0, 2, 1, 1)),
                                                    torch.tensor(w), None if bias is None else torch.tensor(bias),
                                                    stride=(2, 1)))
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act,approximate", [("relu", "none"), ("tanh", "none"), ("sigmoid", "none"),
                                             ("silu", "none"), ("gelu", "none"), ("gelu", "tanh")])
def test_linear_activation_op_equals_linear_then_the_activation(act, approximate, threads):
    import torch
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 70, 96), (80, 96), (80,)))
    torch_act = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu,
                 "gelu": lambda v: torch.nn.functional.gelu(v, approximate=approximate)}[act]
    before = rill.get_num_threads()
    rill.set_num_threads(threads)
    try:
        for bias in (b, None):
            out = rill._linear_activation(rill.tensor(x), rill.tensor(w), None if bias is None else rill.tensor(bias),
                                          activation=act, approximate=approximate)
            want = torch_act(torch.nn.functional.linear(torch.tensor(x), torch.tensor(w),
                                                        None if bias is None else torch.tensor(bias)))
            np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    finally:
        rill.set_num_threads(before)
    with pytest.raises(ValueError, match="no fused activation is called 'elu'"):
        rill._linear_activation(rill.tensor(x), rill.tensor(w), None, activation="elu")
    with pytest.raises(TypeError, match="takes float32"):
        rill._linear_activation(rill.tensor(x).double(), rill.tensor(w).double(), None, activation="relu")


@pytest.mark.parametrize("accumulation", [1, 2])
def test_fuse_optimizer_makes_one_update_per_parameter_group_and_trains_as_unfused(accumulation):
    """The updates of a parameter group (one op type, attrs and lr) are one _multi_<update> op; each member runs its
    own update's kernel, so training is the same bit for bit, with or without writes in place."""
    def opt_adam(m):
        return rill.optim.Adam([{"params": list(m[0].parameters())}, {"params": list(m[2].parameters()), "lr": 3e-3},
                                {"params": list(m[4].parameters())}], lr=1e-3)
    optimizers = {"adam": opt_adam,
                  "sgd": lambda m: rill.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True),
                  "rmsprop": lambda m: rill.optim.RMSprop(m.parameters(), lr=1e-3, momentum=0.5, centered=True)}
    batches = [_data(16, seed=s) for s in range(12)]
    for name, make_opt in optimizers.items():
        def run(fuse):
            m = _mlp(5)
            g = _TrainGraph(m, make_opt(m), accumulation=accumulation)
            g.config.enable_pass("fuse_optimizer", fuse)
            losses = _graph_losses(g, batches)
            fused = [op for op in g.job()["ops"] if op["op_type"].startswith("_multi_")]
            return m, losses, fused, g.stats()["plan_tasks"]
        m_on, l_on, fused, tasks_on = run(True)
        m_off, l_off, unfused, tasks_off = run(False)
        assert l_on == l_off, name
        for p, q in zip(m_on.parameters(), m_off.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
        assert unfused == []
        # Adam's three groups have their own lr each: three groups of two parameters; the others one group of six.
        sizes = sorted(len(op["outputs"]) for op in fused)
        per_param = {"adam": 4, "sgd": 3, "rmsprop": 5}[name]  # param, states, step
        assert sizes == ([2 * per_param] * 3 if name == "adam" else [6 * per_param]), (name, sizes)
        assert tasks_off - tasks_on >= 6 - len(fused), (name, tasks_on, tasks_off)  # and ticks that joined them


class _ScaledSoftmax(nn.Module):
    def __init__(self, log):
        super().__init__()
        rill.manual_seed(15)
        self.proj = nn.Linear(16, 24)
        self.shift = nn.Parameter(rill.randn(24) * 0.1)
        self.log = log

    def forward(self, x):
        s = self.proj(x).reshape(2, -1, 24) * 0.25 + self.shift
        p = rill.log_softmax(s, dim=-1) if self.log else rill.softmax(s, dim=2)
        return p * 1.5 - 0.5


@pytest.mark.parametrize("log", [False, True])
def test_fuse_elementwise_takes_softmax_as_a_row_step_forward_and_backward(log):
    """softmax fed by elementwise producers and feeding elementwise readers is a row step of the fused chain, its
    backward too; training equals the unfused graph and eager."""
    rng = np.random.default_rng(7)
    batches = [(rill.tensor(rng.standard_normal((10, 16)).astype(np.float32)),
                rill.tensor(rng.standard_normal((2, 5, 24)).astype(np.float32))) for _ in range(6)]

    class G(nn.Graph):
        def __init__(self, m, opt):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self, x, t):
            loss = ((self.m(x) - t) ** 2).mean()
            loss.backward()
            return loss

    def run(fuse):
        m = _ScaledSoftmax(log)
        g = G(m, rill.optim.SGD(m.parameters(), lr=0.1))
        g.config.enable_pass("fuse_elementwise", fuse)
        losses = [g(x, t).item() for x, t in batches]
        programs = [op["attrs"]["program"] for op in g.job()["ops"] if op["op_type"] == "_fused_elementwise"]
        return m, losses, programs
    m_on, l_on, programs = run(True)
    m_off, l_off, _ = run(False)
    name = "log_softmax" if log else "softmax"
    assert any(f":{name}1 " in p for p in programs), programs
    assert any(f":{name}_backward" in p for p in programs), programs
    _assert_same_training(m_off, m_on, l_off, l_on)
    m_eager = _ScaledSoftmax(log)
    opt = rill.optim.SGD(m_eager.parameters(), lr=0.1)
    eager = []
    for x, t in batches:
        opt.zero_grad()
        loss = ((m_eager(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        eager.append(loss.item())
    _assert_same_training(m_eager, m_on, eager, l_on)


def test_a_plan_of_one_piece_runs_in_order_as_its_actors_would():
    """A one-piece plan on one thread runs each task once in plan order, with no messages; RILL_GRAPH_ACTORS=1
    runs its actors instead: the same training bit for bit. Gradient accumulation keeps the actors."""
    batches = [_data(16, seed=s) for s in range(10)]

    def run(actors, accumulation=1):
        rill.set_env_override("RILL_GRAPH_ACTORS", "1" if actors else None)
        try:
            model = _mlp(6)
            g = _TrainGraph(model, rill.optim.Adam(model.parameters(), lr=1e-2), accumulation=accumulation)
            losses = _graph_losses(g, batches)
        finally:
            rill.set_env_override("RILL_GRAPH_ACTORS", None)
        return model, losses, g.stats()
    m_order, l_order, in_order = run(False)
    m_actors, l_actors, actors = run(True)
    assert in_order["actor_messages"] == 0 and in_order["actor_acts"] == 10 * in_order["plan_tasks"], in_order
    assert actors["actor_messages"] > 0 and actors["actor_acts"] == in_order["actor_acts"], actors
    assert l_order == l_actors
    for p, q in zip(m_order.parameters(), m_actors.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert run(False, accumulation=2)[2]["actor_messages"] > 0
    # A kernel's error in a plan run in order: test_kernel_error_reaches_the_next_sync_point below.


def test_updates_write_the_variables_in_place_and_train_as_with_copies():
    def run(in_place, opt):
        model = _mlp(3)
        g = _TrainGraph(model, opt(model.parameters()))
        g.config.enable_pass("write_in_place", in_place)
        losses = _graph_losses(g, [_data(16, seed=s) for s in range(30)])
        copies = sum(line.split()[1:2] == ["copy"] for line in g.plan_str().splitlines())
        return model, losses, copies, g
    for opt in (lambda p: rill.optim.Adam(p, lr=1e-2), lambda p: rill.optim.SGD(p, lr=0.1, momentum=0.9)):
        m_in, l_in, c_in, g = run(True, opt)
        m_copy, l_copy, c_copy, _ = run(False, opt)
        assert l_in == l_copy  # the same kernels on the same values
        for p, q in zip(m_in.parameters(), m_copy.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        params = len(list(m_in.parameters()))
        assert c_copy - c_in >= 2 * params, (c_in, c_copy)  # each parameter and at least one state, and steps
        # The state the eager optimizer sees is what the plan wrote in place.
        state = g.state_dict()
        assert state and all(np.isfinite(np.asarray(v)).all() for v in _flat_arrays(state))


def test_outputs_written_in_place_are_fresh_each_call():
    class G(rill.nn.Graph):
        def build(self, x):
            h = rill.tanh(x) * 3
            return h, h.sum(), x.exp()  # h is read by the sum too: copied; the sum and the exp write in place
    g = G()
    a, b = rill.arange(6.0).reshape(2, 3), rill.ones(2, 3)
    first = g(a)
    kinds = [line.split()[1] for line in g.plan_str().splitlines() if line.split()[:1] and line.split()[0][:1] == "t"
             and line.split()[0][1:].isdigit()]
    assert kinds.count("copy") == 1, g.plan_str()
    second = g(b)
    for got, x in ((first, a), (second, b)):
        want = np.tanh(x.numpy()) * 3
        np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(got[1].item(), want.sum(), rtol=1e-5)
        np.testing.assert_allclose(got[2].numpy(), np.exp(x.numpy()), rtol=1e-6)


def _flat_arrays(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _flat_arrays(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _flat_arrays(v)
    elif isinstance(obj, rill.Tensor):
        yield obj.numpy()


def test_state_is_the_eager_state():
    model = _mlp(5)
    opt = rill.optim.SGD(model.parameters(), lr=0.1)
    graph = _TrainGraph(model, opt)
    before = model[0].weight.detach().numpy().copy()
    x, y = _data(8)
    graph(x, y)
    after = model.state_dict()["0.weight"].numpy()
    assert not np.allclose(before, after)  # the eager parameter itself was trained
    # Eager writes between calls are seen by the next call (ordered by the VM like any op).
    with rill.no_grad():
        for p in model.parameters():
            p.zero_()
    loss = graph(x, y).item()
    assert loss == pytest.approx(np.log(10.0), rel=1e-6)


def test_state_dict_round_trip(tmp_path):
    model = _mlp(6)
    opt = rill.optim.Adam(model.parameters(), lr=1e-2)
    graph = _TrainGraph(model, opt)
    x, y = _data(8)
    for _ in range(3):
        graph(x, y)
    path = tmp_path / "graph.pt"
    rill.save(graph.state_dict(), path)
    expected = graph(x, y).item()
    graph.load_state_dict(rill.load(path))
    assert graph(x, y).item() == pytest.approx(expected, rel=1e-6)


def test_call_returns_before_the_work_is_done():
    model = _mlp(7)
    graph = _TrainGraph(model, rill.optim.SGD(model.parameters(), lr=0.1))
    x, y = _data(8)
    graph(x, y).item()  # compiled
    rill.odb.stop_vm_scheduler()
    try:
        loss = graph(x, y)
        assert loss.shape == ()
        assert not rill._C._dist_is_done([loss])
    finally:
        rill.odb.restart_vm_scheduler()
    assert np.isfinite(loss.item())


def test_inference_graph_and_eval_mode_recompiles(caplog):
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5), nn.Linear(16, 4))

    class Infer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    graph = Infer()
    x = rill.randn(8, 16)
    a, b = graph(x).numpy(), graph(x).numpy()
    assert not np.allclose(a, b)  # dropout draws new masks from rill's generator on every call
    model.eval()
    with caplog.at_level(logging.INFO, logger="rill.nn.Graph"):
        out = graph(x)
    assert "compiling" in caplog.text
    np.testing.assert_allclose(out.numpy(), model(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    assert graph.stats()["compiles"] == 2
    graph(rill.randn(4, 16))  # a new shape: a third plan
    assert graph.stats()["compiles"] == 3


def test_sync_points_inside_build_name_the_line():
    class Bad(nn.Graph):
        def __init__(self, how):
            super().__init__()
            self.model = nn.Linear(4, 4)
            self.how = how

        def build(self, x):
            y = self.model(x)
            if self.how == "item":
                y.sum().item()
            elif self.how == "if":
                if y.sum() > 0:
                    y = y * 2
            elif self.how == "numpy":
                y.detach().numpy()
            elif self.how == "nonzero":
                y = rill.nonzero(y)
            return y

    for how in ["item", "if", "numpy", "nonzero"]:
        with pytest.raises(RuntimeError, match=r"nn\.Graph.*test_graph\.py:\d+"):
            Bad(how)(rill.randn(2, 4))


def test_tensors_from_build_have_no_value_afterwards():
    kept = []

    class Keep(nn.Graph):
        def build(self, x):
            y = x * 2
            kept.append(y)
            return y + 1

    out = Keep()(rill.ones(3))
    np.testing.assert_allclose(out.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match="made inside build"):
        kept[0].numpy()


def test_kernel_error_reaches_the_next_sync_point():
    emb = nn.Embedding(4, 3)

    class Lookup(nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = emb

        def build(self, i):
            return self.emb(i)

    graph = Lookup()
    weight = emb.weight.detach().clone().numpy()  # (numpy() of the weight itself would make its ops synchronous)
    ok = graph(rill.tensor([0, 1, 2]))
    np.testing.assert_allclose(ok.numpy(), weight[:3])
    bad = graph(rill.tensor([0, 9, 2]))  # returns at once
    with pytest.raises(IndexError):
        bad.numpy()
    np.testing.assert_allclose(graph(rill.tensor([3, 2, 1])).numpy(), weight[[3, 2, 1]])


def test_job_round_trips_and_prints():
    model = _mlp(8)
    graph = _TrainGraph(model, rill.optim.Adam(model.parameters()))
    x, y = _data(8)
    graph(x, y)
    data = graph.job_bytes()
    again, text = rill._C._graph_job_roundtrip(data)
    assert again == data
    assert "variable" in text and "assign" in text
    printed = repr(graph)
    assert "(model): Sequential" in printed and "job:" in printed
    stats = graph.stats()
    for key in ["compiles", "job_ops", "infer_computed", "infer_cache_hits", "compile_s", "plan_tasks",
                "planned_peak_bytes", "fused_kernels"]:
        assert key in stats
    assert stats["plan_tasks"] > 0 and stats["planned_peak_bytes"] > 0
    ops = graph.job()["ops"]
    assert {op["scope"] for op in ops} >= {"forward", "optimizer"}


def test_48_identical_blocks_infer_each_distinct_op_once():
    def stack(depth):
        rill.manual_seed(0)
        return nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.ReLU()) for _ in range(depth)])

    class Infer(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x = rill.randn(4, 16)
    small, big = Infer(stack(4)), Infer(stack(48))
    small(x), big(x)
    s, b = small.stats(), big.stats()
    per_block = (s["job_ops"] - 2) / 4
    assert b["infer_computed"] <= 2 * per_block + 4
    assert b["infer_cache_hits"] >= b["job_ops"] - b["infer_computed"] - 4
