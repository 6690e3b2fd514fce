"""rill.experimental.delay_tick (Note [The delay tick] in src/rill/runtime/actor.cpp): x itself, whose readers in
graph mode run each micro-batch delay_num micro-batches late."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rill
import rill.nn as nn
from rill.experimental import delay_tick


class _Net(nn.Module):
    def __init__(self, delay):
        super().__init__()
        self.fc1, self.fc2, self.delay = nn.Linear(8, 16), nn.Linear(16, 4), delay

    def forward(self, x):
        h = self.fc1(x)
        if self.delay is not None:
            h = delay_tick(h, self.delay)
        return self.fc2(h.relu())


def _step(delay, pieces):
    rill.manual_seed(0)
    model = _Net(delay)
    opt = rill.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.loss_fn = model, nn.CrossEntropyLoss()
            self.add_optimizer(opt)
            self.config.set_gradient_accumulation_steps(pieces)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss
    return Step(), model


def _batch():
    x = rill.tensor(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32))
    return x, rill.tensor(np.arange(16) % 4)


def test_eager_delay_tick_is_a_view_with_the_gradient_itself():
    x = rill.randn(3, 4, requires_grad=True)
    y = delay_tick(x, 2)
    assert y.shape == x.shape and y.data_ptr() == x.data_ptr()
    (y * rill.arange(4.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tile(np.arange(4.0, dtype=np.float32), (3, 1)))
    with pytest.raises(ValueError, match="delay_num must be at least 0"):
        delay_tick(x, -1)


@pytest.mark.parametrize("delay,pieces", [(0, 4), (2, 4), (3, 4), (4, 4), (9, 4), (2, 1), (5, 8)])
def test_graph_with_a_delay_trains_as_without(delay, pieces):
    x, y = _batch()
    delayed, delayed_model = _step(delay, pieces)
    plain, plain_model = _step(None, pieces)
    for _ in range(3):
        assert delayed(x, y).item() == plain(x, y).item()
    for p, q in zip(delayed_model.parameters(), plain_model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


_TRACED = """
import json, numpy as np, rill, rill.nn as nn
from rill.experimental import delay_tick
rill.manual_seed(0)
fc1, fc2 = nn.Linear(8, 16), nn.Linear(16, 4)
opt = rill.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=0.1)

class Step(nn.Graph):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.loss_fn = fc1, fc2, nn.CrossEntropyLoss()
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps({pieces})

    def build(self, x, y):
        loss = self.loss_fn(self.fc2(delay_tick(self.fc1(x), {delay}).relu()), y)
        loss.backward()
        return loss

g = Step()
x = rill.tensor(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32))
g(x, rill.tensor(np.arange(16) % 4)).item()
ops = g.job()["ops"]
delay = next(op for op in ops if op["op_type"] == "_delay_tick")
producer = next(op["name"] for op in ops if delay["inputs"][0] in op["outputs"])
readers = [op["name"] for op in ops if delay["outputs"][0] in op["inputs"]]
print("OPS", json.dumps({{"producer": producer, "readers": readers}}))
"""


@pytest.mark.parametrize("delay,pieces", [(3, 8), (1, 4), (6, 4)])
def test_a_delayed_piece_is_read_once_the_later_piece_is_made(tmp_path, delay, pieces):
    path = tmp_path / "trace.json"
    env = dict(os.environ, RILL_GRAPH_TRACE=str(path), PYTHONPATH=os.pathsep.join(sys.path))
    script = textwrap.dedent(_TRACED.format(delay=delay, pieces=pieces))
    done = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", script], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout.split("OPS ")[1])
    with open(path) as f:
        kernels = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    made = {e["args"]["piece"]: e["ts"] + e["dur"] for e in kernels if e["name"] == names["producer"]}
    read = {e["args"]["piece"]: e["ts"] for e in kernels if e["name"] in names["readers"]}
    assert sorted(made) == sorted(read) == list(range(pieces)), (names, sorted(made), sorted(read))
    for i in range(pieces):
        # Piece i is read once piece i + delay is made, or, near the end, once the last piece is.
        later = min(i + delay, pieces - 1)
        assert read[i] >= made[later], (i, later, read[i], made[later])
