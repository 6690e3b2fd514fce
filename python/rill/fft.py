"""rill.fft: the real-valued parts of torch.fft (fftshift, ifftshift, fftfreq, rfftfreq). The transforms
themselves produce or take complex tensors, and rill has no complex dtypes: they raise, saying so."""
import rill


def _dims(x, dim):
    if dim is None:
        return tuple(range(x.dim()))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def fftshift(input, dim=None):
    """input rolled so the zero-frequency term is at the centre of each dim (all dims when None)."""
    dims = _dims(input, dim)
    return rill.roll(input, [input.shape[d] // 2 for d in dims], dims) if dims else input.clone()


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    dims = _dims(input, dim)
    return rill.roll(input, [-(input.shape[d] // 2) for d in dims], dims) if dims else input.clone()


def fftfreq(n, d=1.0, *, dtype=None, out=None, **kwargs):
    """The sample frequencies of an n-point transform with sample spacing d: 0, 1, ..., -(n // 2), ..., -1 over
    d * n."""
    k = rill.arange(n, dtype=rill.int64)
    k = rill.where(k < (n + 1) // 2, k, k - n)
    return (k.to(dtype or rill.get_default_dtype()) / (d * n))


def rfftfreq(n, d=1.0, *, dtype=None, out=None, **kwargs):
    """The non-negative sample frequencies of an n-point real transform: 0 .. n // 2 over d * n."""
    return rill.arange(n // 2 + 1, dtype=dtype or rill.get_default_dtype()) / (d * n)


def _complex(name):
    def transform(*args, **kwargs):
        raise NotImplementedError(f"[fft.{name}] Fourier transforms produce or take complex tensors, and rill has "
                                  "no complex dtypes; compute it in numpy (numpy.fft) on the tensor's values")
    transform.__name__ = name
    return transform


for _name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
              "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"):
    globals()[_name] = _complex(_name)
