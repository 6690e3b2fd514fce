"""rill.Generator and rill's default generator: PyTorch's CPU generator, MT19937 (32-bit, seeded with the low
32 bits of the seed by the standard init_genrand), so that for the same seed rand, randn, randint, randperm,
bernoulli, multinomial, dropout and the nn.init fills give PyTorch's numbers.

Note [Drawing on the host]: MT19937 is sequential, so draws are made here, on the host, when an op is issued,
and the op gets the drawn values as a tensor. Results then depend only on the order ops are issued in, and
manual_seed/get_rng_state/set_rng_state between ops take effect in that order; VM workers never touch the
generator, so kernels need no locking. The engine is numpy's legacy RandomState, whose integer seeding is
init_genrand and whose full-range uint32 draws are MT19937's raw outputs.

The transforms are PyTorch's (each checked against torch's CPU generator):
  random()      one 32-bit draw; random64() two draws, the first as the high 32 bits
  float32 U[0,1): (random() & (2^24-1)) * 2^-24;   float64 U[0,1): (random64() & (2^53-1)) * 2^-53
  normal, >= 16 contiguous elements: all uniforms first, then Box-Muller in blocks of 16 (u1 = 1 - d[j],
  u2 = d[j+8], j < 8), the last 16 redrawn and transformed again when the size is not a multiple of 16;
  fewer than 16: per element from two float64 uniforms, the second sample of each pair cached for the next.
"""
import contextlib
import math

import numpy as np

from rill import _C

_DEFAULT_SEED = 67280421310721  # PyTorch's default seed


class Generator:
    """Generator(device='cpu'): manual_seed(seed) returns self; initial_seed(); seed(); get_state()/set_state()."""

    def __init__(self, device="cpu"):
        self.device = _C.device(str(device))
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFFFFFFFFFFFFFF
        self._seed = seed
        self._mt = np.random.RandomState(seed & 0xFFFFFFFF)
        self._normal_cache = None
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def get_state(self):
        """The state as a uint8 tensor (the 624 words, the position, the seed and the cached normal sample)."""
        from rill._creation import tensor
        _, key, pos, _, _ = self._mt.get_state()
        cache = math.nan if self._normal_cache is None else self._normal_cache
        raw = (key.astype("<u4").tobytes() + np.array([pos], "<i8").tobytes()
               + np.array([self._seed], "<u8").tobytes() + np.array([cache], "<f8").tobytes())
        return tensor(np.frombuffer(raw, np.uint8).copy())

    def set_state(self, state):
        arr = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8).reshape(-1)
        if arr.size != _STATE_BYTES:
            raise RuntimeError(f"set_state: expected a uint8 tensor of {_STATE_BYTES} bytes (from get_state()), "
                               f"got {arr.size}")
        raw = arr.tobytes()
        key = np.frombuffer(raw[:2496], "<u4").astype(np.uint32)
        pos = int(np.frombuffer(raw[2496:2504], "<i8")[0])
        if not 0 <= pos <= 624:
            raise RuntimeError("set_state: not a state from get_state() (its position is out of range)")
        self._seed = int(np.frombuffer(raw[2504:2512], "<u8")[0])
        cache = float(np.frombuffer(raw[2512:2520], "<f8")[0])
        self._normal_cache = None if math.isnan(cache) else cache
        self._mt.set_state(("MT19937", key, pos, 0, 0.0))
        return self

    # the engine's draws
    def _random(self, n):
        """n raw 32-bit draws (uint64 array)."""
        return self._mt.randint(0, 2 ** 32, size=n, dtype=np.uint32).astype(np.uint64)

    def _random64(self, n):
        u = self._random(2 * n)
        return (u[0::2] << np.uint64(32)) | u[1::2]

    def _uniform(self, n, double):
        if double:
            return (self._random64(n) & np.uint64(2 ** 53 - 1)).astype(np.float64) * 2.0 ** -53
        return (self._random(n) & np.uint64(2 ** 24 - 1)).astype(np.float32) * np.float32(2.0 ** -24)

    def _normal(self, n, double, mean=0.0, std=1.0):
        """n N(mean, std^2) draws in float64 or float32 as PyTorch's normal_ makes them (see the module note)."""
        dt = np.float64 if double else np.float32
        if n >= 16:
            d = self._uniform(n, double)
            _box_muller_16(d, 0, n // 16, mean, std)
            if n % 16:
                d[n - 16:] = self._uniform(16, double)
                _box_muller_16(d, n - 16, 1, mean, std)
            return d
        out = np.empty(n, np.float64)
        for i in range(n):
            if self._normal_cache is not None:
                z, self._normal_cache = self._normal_cache, None
            else:
                u1, u2 = self._uniform(2, True)
                r = math.sqrt(-2.0 * math.log1p(-u2))
                theta = 2.0 * math.pi * u1
                self._normal_cache = r * math.sin(theta)
                z = r * math.cos(theta)
            out[i] = z
        return _fma(out, float(std), float(mean), np.float64).astype(dt)

    # used by rill.utils.data
    def _randperm(self, n):
        return _randperm(self, n).tolist()

    def _randint(self, high, size):
        return _randint(self, 0, high, size).tolist()


_STATE_BYTES = 624 * 4 + 8 + 8 + 8


def _fma(a, b, c, dt):
    """a * b + c rounded once to dt, as PyTorch's compiled kernels compute it (they contract to a fused
    multiply-add): for float32 exactly via float64 (the product of two floats is exact there); for float64 with
    an error-free product (Dekker's split) and sum."""
    if dt == np.float32:
        return (np.float64(1) * a * np.float64(b) + np.float64(c)).astype(np.float32)
    a = np.asarray(a, np.float64)
    b, c = np.float64(b), np.float64(c)
    p = a * b
    split = np.float64(134217729.0)  # 2^27 + 1
    ah = a * split - (a * split - a)
    al = a - ah
    bh = b * split - (b * split - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + e == a * b exactly
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)  # s + err == p + c exactly
    return s + (err + e)


def _box_muller_16(d, i, blocks, mean, std):
    """Box-Muller in place over `blocks` blocks of 16 uniforms of d from i (u1 = 1 - d[j], u2 = d[j+8], j < 8), with
    PyTorch's arithmetic for d's dtype (Note [Box-Muller in float32] in src/rill/kernels/cpu/box_muller.cpp)."""
    _C._box_muller_blocks(d, i, blocks, float(mean), float(std))


def _uniform_range(g, n, low, high, double):
    """n U[low, high) draws as PyTorch's uniform_: low and high rounded to the dtype, u * (high - low) + low."""
    dt = np.float64 if double else np.float32
    low, high = dt(low), dt(high)
    return _fma(g._uniform(n, double), dt(high - low), low, dt)


def _randint(g, low, high, n):
    """n integers in [low, high): low + draw % (high - low), the draw random() below a 2^32 range, else random64()."""
    span = high - low
    draws = g._random(n) if span < 2 ** 32 else g._random64(n)
    return (draws % np.uint64(span)).astype(np.int64) + np.int64(low)


def _randperm(g, n):
    """PyTorch's Fisher-Yates: for i < n-1, swap r[i] with r[i + random() % (n - i)]."""
    r = np.arange(n, dtype=np.int64)
    if n > 1:
        draws = g._random(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)
        for i, z in enumerate(draws.tolist()):
            j = i + z
            r[i], r[j] = r[j], r[i]
    return r


default_generator = Generator()

# Graph mode keeps the core's Philox random ops (a compiled graph draws fresh numbers at each launch, which a
# value drawn here while tracing could not): nn.Graph traces inside core_random_ops(), and while one is active
# rand, randn, randint and dropout issue the core's ops (seeded by manual_seed too) instead of drawing here.
_core_random_ops = [0]


@contextlib.contextmanager
def core_random_ops():
    """Inside: rand, randn, randint and dropout (without a generator) are the core's Philox ops, as in graph mode
    (eager code that must reproduce a graph's random numbers runs in it)."""
    _core_random_ops[0] += 1
    try:
        yield
    finally:
        _core_random_ops[0] -= 1


def tracing_graph():
    return _core_random_ops[0] > 0


def _resolve(generator):
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a rill.Generator as generator, got {type(generator).__name__}")
    return generator


def _seed_from_global(generator=None):
    """A 63-bit seed drawn from generator or rill's default generator: PyTorch's
    torch.empty((), dtype=torch.int64).random_(generator=g), random64() % 2^63."""
    return int(_randint(_resolve(generator), 0, 2 ** 63, 1)[0])


def _as_tensor(values, shape):
    from rill._creation import tensor  # here: rill._creation imports this module's users
    return tensor(np.ascontiguousarray(values).reshape(tuple(shape)))


def _samples(kind, shape, dtype, generator=None, a=None, b=None):
    """U[a, b) (kind 'uniform', a=0, b=1 by default) or N(a, b^2) (kind 'normal', a=0, b=1 by default) samples
    of shape in dtype (float32 or float64), drawn now from the default generator or generator
    (Note [Drawing on the host])."""
    g = _resolve(generator)
    n = int(np.prod(tuple(shape), dtype=np.int64))
    double = dtype == _C.float64
    if kind == "uniform":
        values = g._uniform(n, double) if a is None else _uniform_range(g, n, a, 1.0 if b is None else b, double)
    else:
        values = g._normal(n, double, 0.0 if a is None else a, 1.0 if b is None else b)
    return _as_tensor(values, shape)


def _generator_or_default(generator, fresh=False):
    """generator; for None the default generator, or with fresh=True a new Generator seeded from it (as
    PyTorch's RandomSampler does)."""
    if generator is None:
        return Generator().manual_seed(_seed_from_global()) if fresh else default_generator
    if isinstance(generator, int):
        return Generator().manual_seed(generator)
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a rill.Generator (or an int seed) as generator, got {type(generator).__name__}")
    return generator
