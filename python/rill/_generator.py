"""rill.Generator: a seedable source of random permutations and integers for samplers and random_split.

Tensor ops draw from rill's global generator (rill.manual_seed); a Generator object is what
DataLoader(shuffle=True, generator=g) and random_split(..., generator=g) take, as in PyTorch. Its stream is
numpy's PCG64: sequences are reproducible in rill but differ from PyTorch's.
"""
import numpy as np

from rill import _C


class Generator:
    """Generator(device='cpu'): manual_seed(seed) returns self; initial_seed(); seed(); get_state()/set_state()."""

    def __init__(self, device="cpu"):
        self.device = _C.device(str(device))
        self._seed = 67280421310721  # PyTorch's default seed
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        seed = int(seed)
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed & 0xFFFFFFFFFFFFFFFF))
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    # used by rill.utils.data
    def _randperm(self, n):
        return self._rng.permutation(n).tolist()

    def _randint(self, high, size):
        return self._rng.integers(0, high, size=size).tolist()


def _seed_from_global():
    """A 62-bit seed drawn from rill's global generator (so rill.manual_seed makes what uses it reproducible)."""
    hi, lo = _C.randint(0, 2 ** 31, (2,)).tolist()
    return (hi << 31) | lo


def _samples(kind, shape, dtype, generator=None):
    """U[0, 1) (kind 'uniform') or N(0, 1) (kind 'normal') samples of shape in dtype (float32 or float64):
    from rill's global generator, or from a rill.Generator's stream."""
    if generator is None:
        return (_C.rand if kind == "uniform" else _C.randn)(*shape, dtype=dtype)
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a rill.Generator as generator, got {type(generator).__name__}")
    from rill._creation import tensor  # here: rill._creation imports this module's users
    draw = generator._rng.random if kind == "uniform" else generator._rng.standard_normal
    return tensor(draw(tuple(shape), dtype=np.float64 if dtype == _C.float64 else np.float32))


def _generator_or_default(generator):
    if generator is None:
        return Generator().manual_seed(_seed_from_global())
    if isinstance(generator, int):
        return Generator().manual_seed(generator)
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a rill.Generator (or an int seed) as generator, got {type(generator).__name__}")
    return generator
