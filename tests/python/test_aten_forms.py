"""torch.* top-level forms with aten's argument orders (python/rill/_aten_forms.py), against PyTorch."""
import numpy as np
import pytest
import torch

import rill

G = np.random.RandomState(0)
X = G.randn(4, 3, 5, 5).astype(np.float32)
W = G.randn(3).astype(np.float32)
B = G.randn(3).astype(np.float32)


def both(fn):
    out = []
    for lib in (rill, torch):
        r = fn(lib)
        out.append(r)
    return out


def close(r, t, **kw):
    if isinstance(t, (tuple, list)):
        for a, b in zip(r, t):
            close(a, b, **kw)
        return
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=kw.get("rtol", 1e-5),
                               atol=kw.get("atol", 1e-6))


CASES = {
    "batch_norm": lambda L: L.batch_norm(L.tensor(X), L.tensor(W), L.tensor(B), L.zeros(3), L.ones(3), True, 0.1,
                                         1e-5, False),
    "instance_norm": lambda L: L.instance_norm(L.tensor(X), L.tensor(W), L.tensor(B), None, None, True, 0.1, 1e-5,
                                               False),
    "norm_except_dim": lambda L: L.norm_except_dim(L.tensor(X), 2, 1),
    "norm_except_dim_all": lambda L: L.norm_except_dim(L.tensor(X), 2, -1),
    "kl_div_sum": lambda L: L.kl_div(L.tensor(X).log_softmax(1), L.tensor(X * 2).softmax(1), 2),
    "kl_div_none_log_target": lambda L: L.kl_div(L.tensor(X).log_softmax(1), L.tensor(X).log_softmax(1), 0,
                                                 log_target=True),
    "bce_with_logits": lambda L: L.binary_cross_entropy_with_logits(L.tensor(X), L.tensor(X).sigmoid(), None,
                                                                    L.tensor(np.full((5,), 2.0, np.float32)), 1),
    "cosine_embedding": lambda L: L.cosine_embedding_loss(L.tensor(X[0, 0]), L.tensor(X[1, 0]),
                                                          L.tensor([1.0, -1.0, 1.0, 1.0, -1.0]), 0.1, 2),
    "hinge_embedding": lambda L: L.hinge_embedding_loss(L.tensor(X[0]), L.tensor(np.sign(X[1])), 0.5, 1),
    "margin_ranking": lambda L: L.margin_ranking_loss(L.tensor(X[0, 0, 0]), L.tensor(X[0, 0, 1]),
                                                      L.tensor([1.0, -1.0, 1.0, 1.0, -1.0]), 0.2, 0),
    "poisson_nll": lambda L: L.poisson_nll_loss(L.tensor(X), L.tensor(np.abs(X)), True, True, 1e-8, 1),
    "triplet_margin": lambda L: L.triplet_margin_loss(L.tensor(X[0, 0]), L.tensor(X[1, 0]), L.tensor(X[2, 0]),
                                                      1.0, 2.0, 1e-6, True, 2),
    "convolution": lambda L: L.convolution(L.tensor(X), L.tensor(X[:2, :, :3, :3]), L.tensor(B[:2]), [1, 2],
                                           [1, 0], [1, 1], False, [0, 0], 1),
    "convolution_transposed": lambda L: L.convolution(L.tensor(X), L.tensor(X[:3, :2, :3, :3]), None, [2, 2],
                                                      [1, 1], [1, 1], True, [1, 0], 1),
    "convolution_1d": lambda L: L.convolution(L.tensor(X[:, :, 0]), L.tensor(X[:2, :, 0, :2]), None, [1], [0],
                                              [2], False, [0], 1),
    "grid_sampler": lambda L: L.grid_sampler(L.tensor(X), L.tensor(np.tanh(X[:, :2].reshape(4, 5, 5, 2))), 0, 1,
                                             False),
    "grid_sampler_nearest_reflection": lambda L: L.grid_sampler(
        L.tensor(X), L.tensor(np.tanh(X[:, 1:].reshape(4, 5, 5, 2) * 2)), 1, 2, True),
    "affine_grid_generator": lambda L: L.affine_grid_generator(L.tensor(X[:2, 0, :2, :3]), [2, 3, 4, 5], False),
    "embedding": lambda L: L.embedding(L.tensor(X[0, 0]), L.tensor([[0, 2], [4, 1]]), 2),
    "max_pool1d_with_indices": lambda L: L.max_pool1d_with_indices(L.tensor(X[:, :, 0]), 2, (), 1),
    "kaiser_periodic": lambda L: L.kaiser_window(7),
    "kaiser_symmetric": lambda L: L.kaiser_window(6, False, 5.0, dtype=L.float64),
    "unsafe_split_with_sizes": lambda L: L.unsafe_split_with_sizes(L.tensor(X), [1, 3]),
    "segment_reduce": lambda L: L.segment_reduce(L.tensor(X[0, 0, 0]), "sum", lengths=L.tensor([2, 3])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_form_matches_torch(name):
    close(*both(CASES[name]))


def test_embedding_renorm_in_place_matches_torch():
    r, t = (lib.tensor(X[0, 0] * 3) for lib in (rill, torch))
    assert rill.embedding_renorm_(r, rill.tensor([0, 2, 2]), 1.5, 2.0) is r
    torch.embedding_renorm_(t, torch.tensor([0, 2, 2]), 1.5, 2.0)
    close(r, t)


def test_native_dropout_mask_and_scaling():
    x = rill.ones(1000)
    out, keep = rill.native_dropout(x, 0.25, True)
    assert keep.dtype == rill.bool and abs(keep.float().mean().item() - 0.75) < 0.06
    np.testing.assert_allclose(out.numpy(), keep.float().numpy() / 0.75, rtol=1e-6)
    out, keep = rill.native_dropout(x, 0.25, False)
    assert keep.all().item() and out.tolist() == x.tolist()


def test_switches_and_predicates():
    rill.set_deterministic_debug_mode("warn")
    assert rill.get_deterministic_debug_mode() == 1 and rill.are_deterministic_algorithms_enabled()
    rill.set_deterministic_debug_mode(0)
    assert rill.get_deterministic_debug_mode() == 0 and not rill.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="debug_mode"):
        rill.set_deterministic_debug_mode("loud")
    assert not rill.is_inference_mode_enabled()
    with rill.inference_mode():
        assert rill.is_inference_mode_enabled() and not rill.is_grad_enabled()
        with rill.inference_mode(False):
            assert rill.is_inference_mode_enabled()
    assert not rill.is_inference_mode_enabled()
    x = rill.ones(2)
    assert rill.get_device(x) == -1 and not rill.is_distributed(x) and not rill.is_storage(x)
    rill.init_num_threads()


def test_asarray_like_torch():
    x = rill.tensor([1.0, 2.0])
    assert rill.asarray(x) is x
    assert rill.asarray(x, copy=True) is not x
    assert rill.asarray(x, dtype=rill.float64).dtype == rill.float64
    with pytest.raises(ValueError, match="copy=False"):
        rill.asarray(x, dtype=rill.float64, copy=False)
    y = rill.asarray([[1, 2], [3, 4]], requires_grad=False)
    assert y.dtype == rill.int64 and y.tolist() == [[1, 2], [3, 4]]
    assert rill.asarray(np.arange(3.0), requires_grad=True).requires_grad


def test_set_printoptions_like_torch():
    values = [[0.123456, 12.5, 1000.25], [3.0, -2.75, 0.5]]
    try:
        for kwargs in ({"precision": 2}, {"sci_mode": True}, {"sci_mode": False, "precision": 6},
                       {"profile": "short"}, {"threshold": 3, "edgeitems": 1}, {"linewidth": 30}):
            torch.set_printoptions(**kwargs)
            rill.set_printoptions(**kwargs)
            assert repr(rill.tensor(values)).replace("rill", "torch") == repr(torch.tensor(values)), kwargs
            assert repr(rill.arange(12.0)) == repr(torch.arange(12.0)), kwargs
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
        rill.set_printoptions(profile="default", sci_mode=None)
    assert repr(rill.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"


def test_legacy_tensor_methods_like_torch():
    for lib in (rill, torch):
        x = lib.ones(2, 3, dtype=lib.float64)
        assert tuple(x.new(2).shape) == (2,) and x.new(2).dtype == lib.float64
        assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype == lib.float64
        assert tuple(x.new().shape) == (0,) and tuple(x.new(4, 5).shape) == (4, 5)
        assert tuple(x.new(lib.Size([1, 2])).shape) == (1, 2)
        t = lib.tensor([3.0, 4.0], dtype=lib.float64)
        assert x.new(t).data_ptr() == t.data_ptr()
        with pytest.raises((TypeError, RuntimeError)):
            x.new(lib.tensor([3, 4]))
        assert x.is_set_to(x) and not x.is_set_to(x.view(3, 2)) and not x.is_set_to(x.clone())
        assert x.const_data_ptr() == x.data_ptr()
        assert x.module_load(lib.zeros(2, 3)).sum().item() == 0
        y = lib.zeros(2)
        y.map2_(lib.ones(2), lib.tensor([2.0, 3.0]), lambda a, b, c: a + b * c)
        assert y.tolist() == [2.0, 3.0]
