"""embedding_bag and EmbeddingBag (rill/nn/_embedding_bag.py) against PyTorch: values and float64 gradients of
the weight and per_sample_weights, over modes, offsets, include_last_offset, padding_idx and max_norm."""
import numpy as np
import pytest
import torch

import rill

TF, F = torch.nn.functional, rill.nn.functional


def run(weight, input, kwargs):
    tw = weight.clone().requires_grad_()
    rw = rill.tensor(weight.numpy()).requires_grad_()
    tk, rk = dict(kwargs), dict(kwargs)
    for k in ("offsets", "per_sample_weights"):
        if k in kwargs:
            tk[k] = kwargs[k].clone().requires_grad_(kwargs[k].is_floating_point())
            rk[k] = rill.tensor(kwargs[k].numpy()).requires_grad_(kwargs[k].is_floating_point())
    to = TF.embedding_bag(input, tw, **tk)
    ro = F.embedding_bag(rill.tensor(input.numpy()), rw, **rk)
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = torch.randn(to.shape, dtype=to.dtype)
    (to * g).sum().backward()
    (ro * rill.tensor(g.numpy())).sum().backward()
    np.testing.assert_allclose(rw.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    if "per_sample_weights" in kwargs:
        np.testing.assert_allclose(rk["per_sample_weights"].grad.numpy(), tk["per_sample_weights"].grad.numpy(),
                                   rtol=1e-10, atol=1e-12)


W = torch.randn(10, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
IDX = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets,include_last", [([0, 3, 3, 7], False), ([0, 2, 9], True), ([0], False)])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_1d_with_offsets(mode, offsets, include_last, padding_idx):
    run(W, IDX, dict(offsets=torch.tensor(offsets), mode=mode, include_last_offset=include_last,
                     padding_idx=padding_idx))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_bags(mode):
    run(W, IDX[:8].reshape(2, 4), dict(mode=mode))


def test_per_sample_weights_and_max_norm():
    run(W, IDX, dict(offsets=torch.tensor([0, 4]), mode="sum", per_sample_weights=torch.randn(9, dtype=W.dtype)))
    run(W * 3, IDX[:8].reshape(4, 2), dict(mode="mean", max_norm=1.5))


def test_module_and_errors():
    torch.manual_seed(0)
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=0).double()
    rm = rill.nn.EmbeddingBag(10, 3, mode="max", padding_idx=0).to(rill.float64)
    rm.load_state_dict({"weight": rill.tensor(tm.weight.detach().numpy())})
    x, off = torch.tensor([0, 3, 3, 1, 0]), torch.tensor([0, 2])
    np.testing.assert_allclose(rm(rill.tensor(x.numpy()), rill.tensor(off.numpy())).detach().numpy(),
                               tm(x, off).detach().numpy())
    assert rm.weight[0].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        F.embedding_bag(rill.tensor(IDX.numpy()), rill.tensor(W.numpy()))
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(rill.tensor(IDX.numpy()), rill.tensor(W.numpy()), rill.tensor([0]), mode="mean",
                        per_sample_weights=rill.ones(9, dtype=rill.float64))
    with pytest.raises(TypeError, match="int32 or int64"):
        F.embedding_bag(rill.tensor(W.numpy()), rill.tensor(W.numpy()), rill.tensor([0]))
