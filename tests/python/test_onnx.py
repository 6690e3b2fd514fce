"""rill.onnx.export: models traced by graph mode's tracer, run in onnxruntime and compared with rill eager."""
import io

import numpy as np
import pytest

import rill
import rill.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))


def _run(data, feeds):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _export(model, x, **kwargs):
    f = io.BytesIO()
    rill.onnx.export(model, x, f, input_names=["x"], output_names=["y"], **kwargs)
    return f.getvalue()


def _eager(model, x):
    model.eval()
    with rill.no_grad():
        return model(x).numpy()


def _check(model, x, **kwargs):
    data = _export(model, x, **kwargs)
    (y,) = _run(data, {"x": x.numpy()})
    np.testing.assert_allclose(y, _eager(model, x), rtol=1e-4, atol=1e-5)
    return data


def _encoder(batch_first):
    rill.manual_seed(0)
    return nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=batch_first)


def test_mlp():
    rill.manual_seed(0)
    _check(_mlp(), rill.randn(5, 8, 8))


def test_cnn():
    rill.manual_seed(0)
    _check(_cnn(), rill.randn(5, 1, 8, 8))


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer(batch_first):
    _check(_encoder(batch_first), rill.randn(7, 3, 32))


def test_export_keeps_training_mode():
    model = _mlp()
    model.train()
    _export(model, rill.randn(2, 8, 8))
    assert model.training and model[1].training


@pytest.mark.parametrize("make,shape", [(_mlp, (4, 8, 8)), (_cnn, (4, 1, 8, 8))])
def test_dynamic_batch(make, shape):
    rill.manual_seed(0)
    model = make()
    data = _export(model, rill.randn(*shape), dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    graph = onnx.load_from_string(data).graph
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for n in (1, 9):
        x = rill.randn(n, *shape[1:])
        (y,) = _run(data, {"x": x.numpy()})
        np.testing.assert_allclose(y, _eager(model, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch_first", [False, True])
def test_dynamic_batch_encoder(batch_first):
    model = _encoder(batch_first)
    dim = 0 if batch_first else 1
    shape = [7, 7]
    shape.insert(dim, 3)
    shape[2] = 32
    axes = {"x": {dim: "batch"}, "y": {dim: "batch"}}
    data = _export(model, rill.randn(*shape), dynamic_axes=axes)
    for n in (2, 5):
        shape[dim] = n
        x = rill.randn(*shape)
        (y,) = _run(data, {"x": x.numpy()})
        np.testing.assert_allclose(y, _eager(model, x), rtol=1e-4, atol=1e-5)


def test_dynamic_sequence_and_batch():
    model = _encoder(False)
    data = _export(model, rill.randn(7, 3, 32), dynamic_axes={"x": {0: "seq", 1: "batch"}, "y": [0, 1]})
    x = rill.randn(4, 6, 32)
    (y,) = _run(data, {"x": x.numpy()})
    np.testing.assert_allclose(y, _eager(model, x), rtol=1e-4, atol=1e-5)


def test_static_shape_is_fixed():
    data = _export(_mlp(), rill.randn(4, 8, 8))
    dims = onnx.load_from_string(data).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [4, 8, 8]


def test_path_and_file_object(tmp_path):
    rill.manual_seed(0)
    model, x = _mlp(), rill.randn(3, 8, 8)
    path = tmp_path / "mlp.onnx"
    rill.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"])
    with open(tmp_path / "mlp2.onnx", "wb") as f:
        rill.onnx.export(model, (x,), f, input_names=["x"], output_names=["y"])
    assert path.read_bytes() == (tmp_path / "mlp2.onnx").read_bytes()
    (y,) = _run(str(path), {"x": x.numpy()})
    np.testing.assert_allclose(y, _eager(model, x), rtol=1e-4, atol=1e-5)


def test_default_names_and_export_params_false():
    rill.manual_seed(0)
    model, x = _mlp(), rill.randn(3, 8, 8)
    f = io.BytesIO()
    rill.onnx.export(model, x, f, export_params=False)
    graph = onnx.load_from_string(f.getvalue()).graph
    names = [i.name for i in graph.input]
    assert names[0] == "input_0" and "1.weight" in names and graph.output[0].name == "output_0"
    assert "1.weight" not in [t.name for t in graph.initializer]


class _Cumsum(nn.Module):
    def forward(self, x):
        return rill.cumsum(x, 1)


def test_unsupported_op_raises():
    with pytest.raises(RuntimeError, match=r"\[onnx.export\] op 'cumsum'.*has no ONNX mapping yet"):
        _export(_Cumsum(), rill.randn(2, 3))


def test_bad_arguments():
    with pytest.raises(TypeError, match="onnx.export"):
        rill.onnx.export(_mlp(), [1, 2], io.BytesIO())
    with pytest.raises(ValueError, match="opset_version"):
        rill.onnx.export(_mlp(), rill.randn(2, 8, 8), io.BytesIO(), opset_version=9)
    with pytest.raises(TypeError, match="unsupported arguments"):
        rill.onnx.export(_mlp(), rill.randn(2, 8, 8), io.BytesIO(), operator_export_type=1)


class _ManyOps(nn.Module):
    """Activations, scalar forms, reductions, views, cat, where, clamp: more of the table at once."""

    def forward(self, x):
        a = nn.functional.gelu(x, approximate="tanh") + nn.functional.silu(x) * 2.0 - (1.0 - x)
        b = a.softmax(-1).sum(1, keepdim=True) + a.mean(dim=(0,))
        c = rill.cat([b, x.permute(0, 2, 1)[:, :, 1:2].expand(-1, -1, 5)], 1)
        d = rill.where(c > 0.1, c, nn.functional.leaky_relu(c, 0.2)).unsqueeze(1).squeeze(1)
        return d[:, 0] / 3.0, rill.clamp(d, min=-0.5).amax(-1)


def test_many_ops_dynamic_batch():
    f = io.BytesIO()
    rill.onnx.export(_ManyOps(), rill.randn(4, 3, 5), f, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    for n in (4, 2):
        x = rill.randn(n, 3, 5)
        with rill.no_grad():
            want = [t.numpy() for t in _ManyOps()(x)]
        for got, w in zip(_run(f.getvalue(), {"x": x.numpy()}), want):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)


class _Attention(nn.Module):
    """Fused attention (rill's _sdpa op) on x's projections: causal, or with an additive mask."""

    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.qkv = nn.Linear(16, 48)
        self.register_buffer("mask", rill.randn(6, 6))

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(x.shape[0], 6, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
        if self.causal:
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention(causal):
    rill.manual_seed(0)
    model = _Attention(causal)
    data = _check(model, rill.randn(3, 6, 16))
    assert "Softmax" in {n.op_type for n in onnx.load_from_string(data).graph.node}


class _SumsWithDtype(nn.Module):
    def forward(self, x):
        return (x * 1000).sum(dim=1, dtype=rill.float64), x.to(rill.int32).sum(dim=1, dtype=rill.float32)


def test_reductions_with_dtype_keep_it():
    x = rill.randn(3, 5)
    outs = _run(_export(_SumsWithDtype(), x), {"x": x.numpy()})
    with rill.no_grad():
        want = _SumsWithDtype()(x)
    for got, w in zip(outs, want):
        assert str(got.dtype) == str(w.dtype).removeprefix("rill.")
        np.testing.assert_allclose(got, w.numpy(), rtol=1e-6)
