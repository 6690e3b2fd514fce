"""End to end: small training runs whose loss curves match PyTorch's from the same weights and data order, and
the main job's example (examples/train_digits.py) reaching its accuracy bar, saving and reloading."""
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest
import torch

import rill
from conftest import assert_close

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _data(n=96, d=10, classes=4, seed=0):
    g = np.random.default_rng(seed)
    centers = g.standard_normal((classes, d)) * 2
    y = g.integers(0, classes, n)
    x = (centers[y] + g.standard_normal((n, d))).astype(np.float32)
    return x, y.astype(np.int64)


def _mlp(lib, d=10, classes=4):
    n = lib.nn
    return n.Sequential(n.Linear(d, 32), n.ReLU(), n.Linear(32, 32), n.Tanh(), n.LayerNorm(32), n.Linear(32, classes))


def _train(lib, model, x, y, make_opt, epochs=4, batch_size=16, workers=0, order=None):
    data = importlib.import_module(lib.__name__ + ".utils.data")
    ds = data.TensorDataset(lib.tensor(x), lib.tensor(y))
    loader = data.DataLoader(ds, batch_size=batch_size, sampler=order, num_workers=workers)
    opt = make_opt(lib, model.parameters())
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    criterion = lib.nn.CrossEntropyLoss()
    losses = []
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            losses.append(loss.item())
        sched.step()
    return losses


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("workers", [0, 2])
def test_loss_curve_matches_torch(opt, workers):
    x, y = _data()
    torch.manual_seed(0)
    tmodel = _mlp(torch)
    rmodel = _mlp(rill)
    rmodel.load_state_dict(tmodel.state_dict())
    order = list(np.random.default_rng(1).permutation(len(y))) * 1  # the same fixed order for both

    def make_opt(lib, params):
        if opt == "sgd":
            return lib.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
        return lib.optim.AdamW(params, lr=0.01, weight_decay=0.05)

    tl = _train(torch, tmodel, x, y, make_opt, order=order)
    rl = _train(rill, rmodel, x, y, make_opt, workers=workers, order=order)
    assert len(rl) == len(tl) == 24
    np.testing.assert_allclose(rl, tl, rtol=2e-4, atol=1e-5)
    assert tl[-1] < 0.5 * tl[0]  # it learned
    tsd = tmodel.state_dict()
    for k, v in rmodel.state_dict().items():
        assert_close(v, tsd[k], rtol=1e-3, atol=1e-4)


def test_eval_mode_batchnorm_dropout_model_matches_torch():
    x, y = _data(n=64)

    def build(lib):
        n = lib.nn
        return n.Sequential(n.Linear(10, 16), n.BatchNorm1d(16), n.ReLU(), n.Dropout(0.0), n.Linear(16, 4))
    torch.manual_seed(1)
    t = build(torch)
    r = build(rill)
    r.load_state_dict(t.state_dict())

    def make_opt(lib, params):
        # (not an adaptive optimizer: the bias before BatchNorm has a zero gradient up to rounding noise,
        # which RMSprop/Adam would scale up to full-size steps)
        return lib.optim.SGD(params, lr=0.05, momentum=0.5)
    order = list(range(64))
    tl = _train(torch, t, x, y, make_opt, epochs=3, order=order)
    rl = _train(rill, r, x, y, make_opt, epochs=3, order=order)
    np.testing.assert_allclose(rl, tl, rtol=2e-4, atol=1e-5)
    t.eval()
    r.eval()
    assert_close(r(rill.tensor(x)).detach(), t(torch.tensor(x)).detach(), rtol=1e-3, atol=1e-4)


def _load_example():
    spec = importlib.util.spec_from_file_location("train_digits", ROOT / "examples" / "train_digits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_digits_example_meets_the_bar(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    example = _load_example()
    rc = example.main(["--out", str(tmp_path), "--no-progress", "--models", "mlp,cnn"])
    metrics = json.loads((tmp_path / "metrics_rill.json").read_text())
    mlp = metrics["results"]["mlp"]
    assert mlp["test_accuracy"] >= 0.95 and mlp["reloaded_accuracy"] == mlp["test_accuracy"]
    cnn = metrics["results"]["cnn"]
    assert cnn["test_accuracy"] >= 0.97 and cnn["reloaded_accuracy"] == cnn["test_accuracy"]
    assert rc == 0
    assert (tmp_path / "digits_mlp_rill.pt").stat().st_size > 0
    png = (tmp_path / "digits_rill.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # the checkpoint is rill's format and holds the model's state dict
    sd = rill.load(str(tmp_path / "digits_mlp_rill.pt"))
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    assert len(metrics["history"]["mlp"]["test_acc"]) == 20


def test_train_digits_example_under_strict_dtype_mode(tmp_path):
    """--strict: the example's conversions are all explicit, so it trains to the same bars under strict mode,
    and the mode is the calling thread's only while it runs."""
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    example = _load_example()
    rc = example.main(["--out", str(tmp_path), "--no-progress", "--models", "mlp,cnn", "--strict"])
    metrics = json.loads((tmp_path / "metrics_rill.json").read_text())
    assert metrics["strict"] and rc == 0, metrics["results"]
    assert metrics["results"]["mlp"]["test_accuracy"] >= 0.95 and metrics["results"]["cnn"]["test_accuracy"] >= 0.97
    assert not rill.is_strict_dtype()


def test_train_digits_mlp_in_bfloat16(tmp_path):
    """Module.to(rill.bfloat16): the digits MLP trains in bfloat16 (under strict mode, so nothing is converted
    behind its back) to >= 93% test accuracy."""
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    example = _load_example()
    rc = example.main(["--out", str(tmp_path), "--no-progress", "--models", "mlp", "--dtype", "bfloat16",
                       "--strict"])
    metrics = json.loads((tmp_path / "metrics_rill.json").read_text())
    assert metrics["dtype"] == "bfloat16" and rc == 0, metrics["results"]
    assert metrics["results"]["mlp"]["test_accuracy"] >= 0.93
    sd = rill.load(str(tmp_path / "digits_mlp_rill.pt"))
    assert all(v.dtype == rill.bfloat16 for v in sd.values())


def test_example_runs_on_torch_too(tmp_path):
    pytest.importorskip("sklearn")
    example = _load_example()
    rc = example.main(["--framework", "torch", "--out", str(tmp_path), "--no-progress", "--models", "mlp",
                       "--epochs", "3"])
    metrics = json.loads((tmp_path / "metrics_torch.json").read_text())
    assert metrics["results"]["mlp"]["test_accuracy"] > 0.8
    assert rc in (0, 1) and os.path.exists(tmp_path / "digits_mlp_torch.pt")


def test_unsupported_things_say_so_by_name():
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        rill.nn.Linear(2, 2).cuda()
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        rill.zeros(1).cuda()
