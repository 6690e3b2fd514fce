"""rill's generator against PyTorch's CPU generator: for the same seed the same bits (rill/_generator.py)."""
import itertools

import numpy as np
import pytest
import torch

import rill

SIZES = [1, 7, 15, 16, 17, 100, 1000, 4099]
SEEDS = [0, 7, 2 ** 40 + 3]
DTYPES = [(torch.float32, rill.float32), (torch.float64, rill.float64)]


def _same(fn, seed, td, rd):
    torch.manual_seed(seed)
    expected = fn(torch, td)
    rill.manual_seed(seed)
    got = fn(rill, rd)
    e, g = expected.detach().numpy(), got.detach().numpy()
    assert e.dtype == g.dtype and e.shape == g.shape
    assert np.array_equal(e.view(np.uint8), g.view(np.uint8)), f"first differences at {np.nonzero(e != g)[0][:5]}"


FILLS = {
    "rand": lambda m, d, n: m.rand(n, dtype=d),
    "randint": lambda m, d, n: m.randint(-3, 50, (n,)),
    "randint_wide": lambda m, d, n: m.randint(0, 2 ** 40, (n,)),
    "randperm": lambda m, d, n: m.randperm(n),
    "uniform_": lambda m, d, n: m.empty(n, dtype=d).uniform_(-1.5, 4),
    "bernoulli_scalar": lambda m, d, n: m.empty(n, dtype=d).bernoulli_(0.4),
    "bernoulli_tensor": lambda m, d, n: m.bernoulli(m.arange(n, dtype=d) / n),
    "multinomial_replacement": lambda m, d, n: m.multinomial(m.arange(1, n + 1, dtype=d), 9, True),
    "multinomial_no_replacement": lambda m, d, n: m.multinomial(m.arange(1, n + 6, dtype=d), 5, False),
    "multinomial_2d": lambda m, d, n: m.multinomial(m.arange(1, 2 * n + 1, dtype=d).reshape(2, n), 1, False),
    "exponential_": lambda m, d, n: m.empty(n, dtype=d).exponential_(2.0),
    "dropout_mask": lambda m, d, n: m.nn.functional.dropout(m.ones(n, dtype=d), 0.3),
    "dropout_module": lambda m, d, n: m.nn.Dropout(0.6)(m.ones(3, n, dtype=d)),
}


@pytest.mark.parametrize("name", sorted(FILLS))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64"])
def test_fill_bit_equal(name, n, dtypes):
    for seed in SEEDS:
        _same(lambda m, d: FILLS[name](m, d, n), seed, *dtypes)


NORMALS = {
    "randn": lambda m, d, n: m.randn(n, dtype=d),
    "normal_": lambda m, d, n: m.empty(n, dtype=d).normal_(2, 3),
    "normal": lambda m, d, n: m.normal(-1.0, 0.5, (n,), dtype=d),
}


@pytest.mark.parametrize("name", sorted(NORMALS))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64"])
def test_normal_bit_equal(name, n, dtypes):
    for seed in SEEDS:
        _same(lambda m, d: NORMALS[name](m, d, n), seed, *dtypes)


_BASELINE_SCRIPT = """
import numpy as np, torch, rill
for seed in (0, 5):
    for n in (16, 17, 100, 4099):
        torch.manual_seed(seed); rill.manual_seed(seed)
        e, g = torch.randn(n).numpy(), rill.randn(n).numpy()
        assert np.array_equal(e.view(np.uint8), g.view(np.uint8)), (seed, n, np.nonzero(e != g)[0][:5])
print("equal")
"""


def test_float32_normal_without_avx2_matches_torch_without_avx2():
    # both frameworks told to run as on a CPU without AVX2: PyTorch then takes its scalar loop (libm's logf,
    # cosf, sinf), and so does rill (Note [Box-Muller in float32] in src/rill/kernels/cpu/box_muller.cpp)
    import os
    import subprocess
    import sys
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default", RILL_CPU_ISA="baseline")
    out = subprocess.run([sys.executable, "-c", _BASELINE_SCRIPT], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "equal" in out.stdout, out.stderr


def test_float32_normal_over_many_draws():
    # 2^20 draws: the Cephes-style log and sincos lanes over the whole range of uniforms
    for seed in (1, 2 ** 33 + 9):
        _same(lambda m, d: m.randn(1 << 20, dtype=d), seed, torch.float32, rill.float32)


def test_sequence_of_ops_continues_the_stream():
    def program(m):
        return [m.rand(3), m.randn(5, dtype=m.float64), m.randint(10, (4,)), m.randn(2), m.rand(2, dtype=m.float64),
                m.randperm(6), m.randn(1), m.randn(1)]
    torch.manual_seed(11)
    expected = program(torch)
    rill.manual_seed(11)
    got = program(rill)
    for e, g in zip(expected, got):
        assert np.array_equal(e.numpy(), g.numpy())


def test_rng_state_round_trip():
    rill.manual_seed(5)
    rill.randn(3)  # leaves a cached normal sample
    state = rill.get_rng_state()
    a = [rill.randn(1).item(), rill.rand(17).numpy(), rill.randint(0, 9, (5,)).numpy()]
    rill.set_rng_state(state)
    b = [rill.randn(1).item(), rill.rand(17).numpy(), rill.randint(0, 9, (5,)).numpy()]
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    assert rill.initial_seed() == 5
    with pytest.raises(RuntimeError, match="bytes"):
        rill.set_rng_state(rill.zeros(10, dtype=rill.uint8))


def test_generator_objects():
    g = rill.Generator().manual_seed(9)
    t = torch.Generator().manual_seed(9)
    assert np.array_equal(rill.rand(20, generator=g).numpy(), torch.rand(20, generator=t).numpy())
    assert np.array_equal(rill.randperm(30, generator=g).numpy(), torch.randperm(30, generator=t).numpy())
    assert g.initial_seed() == 9
    state = g.get_state()
    x = rill.randn(5, generator=g).numpy()
    g.set_state(state)
    assert np.array_equal(rill.randn(5, generator=g).numpy(), x)
    with pytest.raises(TypeError, match="Generator"):
        rill.rand(3, generator=object())


@pytest.mark.parametrize("build", [
    lambda nn: nn.Linear(20, 7),
    lambda nn: nn.Conv2d(3, 8, 3),
    lambda nn: nn.LSTM(6, 10, num_layers=2),
], ids=["Linear", "Conv2d", "LSTM"])
def test_initial_weights_match_torch(build):
    torch.manual_seed(0)
    expected = build(torch.nn)
    rill.manual_seed(0)
    got = build(rill.nn)
    e, g = list(expected.named_parameters()), list(got.named_parameters())
    assert [n for n, _ in e] == [n for n, _ in g]
    for (name, pe), (_, pg) in zip(e, g):
        assert np.array_equal(pe.detach().numpy(), pg.detach().numpy()), name


def test_data_order_matches_torch():
    from torch.utils import data as tdata
    from rill.utils import data as rdata
    d = list(range(23))
    torch.manual_seed(3)
    rill.manual_seed(3)
    assert list(tdata.RandomSampler(d)) == list(rdata.RandomSampler(d))
    assert (list(tdata.RandomSampler(d, replacement=True, num_samples=70))
            == list(rdata.RandomSampler(d, replacement=True, num_samples=70)))
    assert ([list(s) for s in tdata.random_split(d, [5, 18])] == [list(s) for s in rdata.random_split(d, [5, 18])])
    assert ([b.tolist() for b in tdata.DataLoader(d, batch_size=4, shuffle=True)]
            == [b.tolist() for b in rdata.DataLoader(d, batch_size=4, shuffle=True)])
    tg, rg = torch.Generator().manual_seed(4), rill.Generator().manual_seed(4)
    assert list(tdata.RandomSampler(d, generator=tg)) == list(rdata.RandomSampler(d, generator=rg))


def test_random_sampler_with_replacement_is_lazy():
    from rill.utils.data import RandomSampler
    sampler = RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    first = list(itertools.islice(iter(sampler), 100))
    assert len(first) == 100 and all(0 <= i < 10 for i in first)
    assert len(sampler) == int(1e10)


def test_rrelu_takes_a_generator():
    x = rill.linspace(-3, 1, 9)
    a = rill.rrelu(x, training=True, generator=rill.Generator().manual_seed(5))
    b = rill.rrelu(x, training=True, generator=rill.Generator().manual_seed(5))
    c = rill.rrelu(x, training=True, generator=rill.Generator().manual_seed(6))
    assert np.array_equal(a.numpy(), b.numpy()) and not np.array_equal(a.numpy(), c.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rrelu_draws_like_torch(dtype):
    # one float64 draw per element <= 0 (none for the others), so the stream after it is PyTorch's too
    x = torch.randn(7, 13).to(getattr(torch, dtype))
    x[0, :3] = 0
    for seed in SEEDS:
        torch.manual_seed(seed)
        expected, after = torch.nn.functional.rrelu(x, 0.1, 0.3, training=True), torch.rand(4)
        rill.manual_seed(seed)
        got = rill.nn.functional.rrelu(rill.tensor(x.float().numpy()).to(getattr(rill, dtype)), 0.1, 0.3,
                                       training=True)
        assert np.array_equal(got.float().numpy(), expected.float().numpy())
        assert np.array_equal(rill.rand(4).numpy(), after.numpy())
    torch.manual_seed(1)
    expected = torch.nn.RReLU()(x.float())
    rill.manual_seed(1)
    assert np.array_equal(rill.nn.RReLU()(rill.tensor(x.float().numpy())).numpy(), expected.numpy())
