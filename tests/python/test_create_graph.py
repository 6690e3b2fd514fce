"""Gradients of gradients: backward/grad with create_graph=True, and autograd.functional's second-order
helpers (hessian, hvp, vhp, jvp), against PyTorch (Note [Gradients of gradients] in autograd/rules.h)."""
import numpy as np
import pytest
import torch

import rill

F_CASES = {
    "tanh": lambda L, x: L.tanh(x).sum(),
    "sigmoid_pow": lambda L, x: L.sigmoid(x).pow(2).sum(),
    "exp_sin": lambda L, x: (L.exp(x) * L.sin(x)).sum(),
    "matmul": lambda L, x: (x @ x.t()).pow(3).sum(),
    "relu": lambda L, x: (L.relu(x) * x).sum(),
    "softplus": lambda L, x: L.nn.functional.softplus(x, beta=2.0, threshold=1.0).sum(),
    "gelu": lambda L, x: L.nn.functional.gelu(x).sum(),
    "gelu_tanh": lambda L, x: L.nn.functional.gelu(x, approximate="tanh").sum(),
    "silu": lambda L, x: L.nn.functional.silu(x).sum(),
    "elu": lambda L, x: L.nn.functional.elu(x, 0.7).pow(2).sum(),
    "leaky_relu": lambda L, x: (L.nn.functional.leaky_relu(x, 0.1) * x).sum(),
    "hardtanh": lambda L, x: (L.nn.functional.hardtanh(x, -0.5, 0.5) * x).sum(),
    "softmax": lambda L, x: (L.softmax(x, 1) ** 2).sum(),
    "log_softmax": lambda L, x: (L.log_softmax(x, 0) ** 2).sum(),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x * x, L.tensor([0, 1, 2])),
    "cross_entropy_weight": lambda L, x: L.nn.functional.cross_entropy(
        x * x, L.tensor([0, 3, 2]), weight=L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64), reduction="sum"),
    "layer_norm": lambda L, x: (L.nn.functional.layer_norm(x, (4,), x[0], x[1]) ** 3).sum(),
    "batch_norm": lambda L, x: (L.nn.functional.batch_norm(x, None, None, training=True) ** 3).sum(),
    "linear": lambda L, x: L.nn.functional.linear(x, x, x[:, 0]).tanh().sum(),
    "index_and_view": lambda L, x: (x[:, 1:3] ** 3).sum() + (x[0] ** 2).sum() + (x.t().reshape(-1)[::2] ** 3).sum(),
    "cumprod_with_zero": lambda L, x: (L.cat([x[:, :1], x[:, 1:2] * 0, x[:, 2:]], 1).cumprod(1) ** 2).sum(),
    "remainder": lambda L, x: (L.remainder(x * 3, x * x + 1) ** 2).sum(),
    "embedding": lambda L, x: (L.nn.functional.embedding(L.tensor([0, 2, 2]), x, padding_idx=2) ** 3).sum(),
    "conv2d": lambda L, x: L.nn.functional.conv2d(x.reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2),
                                                  padding=1).pow(2).sum(),
    "conv_transpose2d": lambda L, x: L.nn.functional.conv_transpose2d(
        x.reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2), stride=2).pow(2).sum(),
    "max_pool2d": lambda L, x: (L.nn.functional.max_pool2d(x.reshape(1, 1, 3, 4), 2, 1) ** 3).sum(),
    "max_pool2d_indices": lambda L, x: (L.nn.functional.max_pool2d(x.reshape(1, 1, 3, 4), 2,
                                                                   return_indices=True)[0] ** 3).sum(),
    "avg_pool2d": lambda L, x: (L.nn.functional.avg_pool2d(x.reshape(1, 1, 3, 4), 2, 1) ** 3).sum(),
    "adaptive_avg_pool2d": lambda L, x: (L.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 3, 4), (2, 3))
                                         ** 3).sum(),
    "sdpa_causal": lambda L, x: (L.nn.functional.scaled_dot_product_attention(
        x.reshape(1, 3, 4), x.reshape(1, 3, 4) * 2, x.reshape(1, 3, 4).sin(), is_causal=True) ** 2).sum(),
    "sdpa_float_mask": lambda L, x: (L.nn.functional.scaled_dot_product_attention(
        x.reshape(1, 3, 4), x.reshape(1, 3, 4), x.reshape(1, 3, 4), attn_mask=x[:, :3].cos()) ** 2).sum(),
    "pinv": lambda L, x: (L.linalg.pinv(x) ** 2).sum(),
    "i1": lambda L, x: L.special.i1(x).pow(2).sum(),
}


def _gradgrad(lib, fn, a):
    x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(fn(lib, x), x, create_graph=True)
    w = lib.tensor(np.cos(np.arange(a.size) * 0.7).reshape(a.shape), dtype=lib.float64)
    (h,) = lib.autograd.grad((g * w).sum(), x)
    return g.detach().numpy(), h.numpy()


@pytest.mark.parametrize("name", list(F_CASES))
def test_second_derivative_matches_torch(name):
    a = np.random.RandomState(0).randn(3, 4)
    got, expected = _gradgrad(rill, F_CASES[name], a), _gradgrad(torch, F_CASES[name], a)
    for r, t in zip(got, expected):
        np.testing.assert_allclose(r, t, rtol=1e-7, atol=1e-9)


def test_max_pool_fast_path_second_derivative():
    # above 2,048 elements the forward runs oneDNN, whose workspace the second derivative reads
    a = np.random.RandomState(1).randn(2, 8, 16, 20)
    results = []
    for lib in (rill, torch):
        x = lib.tensor(a, dtype=lib.float32, requires_grad=True)
        y = lib.nn.functional.max_pool2d(x, 3, 2, 1)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * lib.tensor(np.cos(np.arange(a.size)).reshape(a.shape),
                                                 dtype=lib.float32)).sum(), x)
        results.append(h.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)


def test_backward_create_graph_gives_grad_a_history():
    x = rill.tensor([0.5, -1.0, 2.0], dtype=rill.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    g = x.grad
    (x ** 2).sum().backward(create_graph=True)  # accumulates out of place: .grad is a new tensor
    assert x.grad is not g
    assert np.allclose(x.grad.detach().numpy(), 3 * x.detach().numpy() ** 2 + 2 * x.detach().numpy())
    (h,) = rill.autograd.grad(x.grad.sum(), x)
    assert np.allclose(h.numpy(), 6 * x.detach().numpy() + 2)


def test_without_create_graph_gradients_have_no_history():
    x = rill.tensor([0.5, -1.0], dtype=rill.float64, requires_grad=True)
    (g,) = rill.autograd.grad((x ** 3).sum(), x)
    assert not g.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        rill.autograd.grad(g.sum(), x)


def test_custom_function_backward_is_differentiable():
    class Cube(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x * x

    class Once(Cube):
        @staticmethod
        @rill.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x * x

    x = rill.tensor([0.5, 2.0], dtype=rill.float64, requires_grad=True)
    (g,) = rill.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = rill.autograd.grad(g.sum(), x)
    assert np.allclose(h.numpy(), 6 * x.detach().numpy())
    (g,) = rill.autograd.grad(Once.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


def test_gradient_penalty_training_matches_torch():
    # WGAN-GP's critic step: the penalty is a function of the input gradient, so its backward runs through it
    def run(lib):
        lib.manual_seed(0)
        critic = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.LeakyReLU(0.2), lib.nn.Flatten(),
                                   lib.nn.Linear(4 * 6 * 6, 8), lib.nn.Tanh(), lib.nn.LayerNorm(8),
                                   lib.nn.Linear(8, 1)).double()
        opt = lib.optim.Adam(critic.parameters(), lr=1e-2)
        gen = np.random.RandomState(3)
        losses = []
        for _ in range(5):
            real = lib.tensor(gen.randn(5, 1, 6, 6))
            fake = lib.tensor(gen.randn(5, 1, 6, 6) * 0.5)
            eps = lib.tensor(gen.rand(5, 1, 1, 1))
            mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
            (g,) = lib.autograd.grad(critic(mix).sum(), mix, create_graph=True)
            penalty = ((g.reshape(5, -1).norm(dim=1) - 1) ** 2).mean()
            loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy() for p in critic.parameters()]

    (rl, rp), (tl, tp) = run(rill), run(torch)
    np.testing.assert_allclose(rl, tl, rtol=1e-9)
    for a, b in zip(rp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def _both(name, fn, inputs, **kwargs):
    got = getattr(rill.autograd.functional, name)(
        fn(rill), tuple(rill.tensor(a) for a in inputs) if isinstance(inputs, tuple) else rill.tensor(inputs),
        **kwargs)
    expected = getattr(torch.autograd.functional, name)(
        fn(torch), tuple(torch.tensor(a) for a in inputs) if isinstance(inputs, tuple) else torch.tensor(inputs),
        **kwargs)
    return got, expected


def _assert_nested_close(got, expected):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_nested_close(g, e)
        return
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)


def _scalar(lib):
    return lambda x: (lib.tanh(x) * x.sum() + x.exp()).sum()


def _pair(lib):
    return lambda x, y: (x.sin() * (y @ y.t()).sum() + (x * x).sum() * y.sum()).sum()


A = np.random.RandomState(5).randn(3)
B = (np.random.RandomState(6).randn(3), np.random.RandomState(7).randn(2, 2))


@pytest.mark.parametrize("name", ["hessian", "vhp", "hvp"])
def test_second_order_functionals_match_torch(name):
    if name == "hessian":
        _assert_nested_close(*_both(name, _scalar, A))
        _assert_nested_close(*_both(name, _pair, B))
    else:
        r = getattr(rill.autograd.functional, name)(_scalar(rill), rill.tensor(A), rill.tensor(np.cos(A)))
        t = getattr(torch.autograd.functional, name)(_scalar(torch), torch.tensor(A), torch.tensor(np.cos(A)))
        _assert_nested_close(r, t)
        v = tuple(np.cos(b) for b in B)
        r = getattr(rill.autograd.functional, name)(_pair(rill), tuple(rill.tensor(b) for b in B),
                                                    tuple(rill.tensor(x) for x in v))
        t = getattr(torch.autograd.functional, name)(_pair(torch), tuple(torch.tensor(b) for b in B),
                                                     tuple(torch.tensor(x) for x in v))
        _assert_nested_close(r, t)


def test_jvp_and_jacobian_create_graph_match_torch():
    def f(lib):
        return lambda x: lib.stack([x.sin().sum(), (x * x).prod(), x[0] * x[1]])
    r = rill.autograd.functional.jvp(f(rill), rill.tensor(A), rill.tensor(np.cos(A)))
    t = torch.autograd.functional.jvp(f(torch), torch.tensor(A), torch.tensor(np.cos(A)))
    _assert_nested_close(r, t)
    x = rill.tensor(A, requires_grad=True)
    jac = rill.autograd.functional.jacobian(f(rill), x, create_graph=True)
    assert jac.requires_grad
    (g,) = rill.autograd.grad(jac.sum(), x)
    xt = torch.tensor(A, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.autograd.functional.jacobian(f(torch), xt, create_graph=True).sum(), xt)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-9)
    h = rill.autograd.functional.hessian(_scalar(rill), rill.tensor(A))
    assert not h.requires_grad


def test_functional_errors_are_clear():
    with pytest.raises(RuntimeError, match="single element"):
        rill.autograd.functional.hessian(lambda x: x * 2, rill.tensor(A))
    with pytest.raises(RuntimeError, match="independent of"):
        rill.autograd.functional.vjp(lambda x, y: x * 2, (rill.tensor(A), rill.tensor(A)), rill.tensor(A),
                                     strict=True)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        rill.autograd.functional.jacobian(lambda x: x, rill.tensor(A), strategy="forward-mode")


def test_is_grads_batched_matches_torch():
    def run(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x.sin() * x.sum()
        v = lib.tensor(np.eye(3))
        return lib.autograd.grad(y, x, v, is_grads_batched=True)[0]
    np.testing.assert_allclose(run(rill).numpy(), run(torch).numpy(), rtol=1e-12)


def test_an_op_without_a_second_derivative_says_so():
    # modified_bessel_i1 has no derivative (as in PyTorch); an op a create_graph rule runs without a rule
    # raises at the create_graph backward rather than dropping a term
    x = rill.tensor([0.5, 1.5], dtype=rill.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="not implemented"):
        rill.special.modified_bessel_i1(x).sum().backward()


@pytest.mark.parametrize("name", ["lstm", "gru", "conv_bn_pool"])
def test_input_gradient_penalty_through_modules_matches_torch(name):
    makers = {
        "lstm": (lambda L: L.nn.LSTM(4, 5, num_layers=2, batch_first=True), (2, 3, 4)),
        "gru": (lambda L: L.nn.GRU(4, 5, bidirectional=True), (3, 2, 4)),
        "conv_bn_pool": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 3, 3), L.nn.BatchNorm2d(3), L.nn.ReLU(),
                                                   L.nn.MaxPool2d(2), L.nn.Flatten(), L.nn.Linear(12, 2)),
                         (2, 2, 6, 6)),
    }
    make, shape = makers[name]

    def run(lib):
        lib.manual_seed(0)
        m = make(lib).double()
        x = lib.tensor(np.random.RandomState(0).randn(*shape), requires_grad=True)
        out = m(x)
        out = out[0] if isinstance(out, tuple) else out
        (g,) = lib.autograd.grad((out ** 2).sum(), x, create_graph=True)
        penalty = (g ** 2).sum()
        penalty.backward()
        return penalty.item(), [p.grad.numpy() for p in m.parameters()]

    (rp, rg), (tp, tg) = run(rill), run(torch)
    assert rp == pytest.approx(tp, rel=1e-12)
    for a, b in zip(rg, tg):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
