"""torch.signal.windows: window functions of length M, computed in float64 and returned in dtype (the default
float dtype when None). sym=False gives the periodic window (the first M points of the M + 1 symmetric one)."""
import math

import rill


def _window(name, M, sym, dtype, requires_grad, values):
    """values(n, L) for n = 0..L-1 (L = M, or M + 1 when periodic), cut to M points and converted."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dtype = rill.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    if M <= 1:
        out = rill.ones((M,), dtype=dtype)
    else:
        length = M if sym else M + 1
        out = values(rill.arange(length, dtype=rill.float64), length)[:M].to(dtype)
    return out.requires_grad_() if requires_grad else out


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_k (-1)^k a_k cos(2 pi k n / (M - 1))."""
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"Coefficients must be a list/tuple, got {type(a).__name__}")
    if not a:
        raise ValueError("Coefficients cannot be empty")

    def values(n, length):
        out = rill.zeros((length,), dtype=rill.float64)
        for k, c in enumerate(a):
            out = out + ((-1) ** k) * c * rill.cos(n * (2 * math.pi * k / (length - 1)))
        return out
    return _window("general_cosine", M, sym, dtype, requires_grad, values)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (general_hamming with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (general_hamming with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (general_cosine with a = 0.42, 0.5, 0.08)."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |2 n / (M - 1) - 1|."""
    return _window("bartlett", M, sym, dtype, requires_grad,
                   lambda n, length: 1 - (n * (2 / (length - 1)) - 1).abs())


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sin(pi (n + 0.5) / M)."""
    return _window("cosine", M, sym, dtype, requires_grad, lambda n, length: rill.sin((n + 0.5) * (math.pi / length)))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-|n - center| / tau); center defaults to the middle."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def values(n, length):
        c = (length - 1) / 2 if center is None else center
        return rill.exp(-(n - c).abs() / tau)
    return _window("exponential", M, sym, dtype, requires_grad, values)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-((n - (M - 1) / 2) / std)^2 / 2)."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, requires_grad,
                   lambda n, length: rill.exp(-(((n - (length - 1) / 2) / std) ** 2) / 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def values(n, length):
        r = n * (2 / (length - 1)) - 1
        return rill.i0(beta * rill.sqrt((1 - r * r).clamp_min(0))) / rill.i0(rill.full((), float(beta), dtype=rill.float64))
    return _window("kaiser", M, sym, dtype, requires_grad, values)
