"""Conversions between probabilities and logits shared by the discrete distributions."""
import rill
from rill.distributions.distribution import broadcast_all  # noqa: F401  (torch.distributions.utils.broadcast_all)


def _eps(dtype):
    return rill.finfo(dtype).eps


def probs_to_logits(probs, is_binary=False):
    """log-odds (binary) or log-probabilities of probs clamped to [eps, 1 - eps]."""
    eps = _eps(probs.dtype)
    clamped = rill.clamp(probs, min=eps, max=1 - eps)
    if is_binary:
        return rill.log(clamped) - rill.log1p(-clamped)
    return rill.log(clamped)


def logits_to_probs(logits, is_binary=False):
    """sigmoid (binary) or softmax over the last dim."""
    if is_binary:
        return rill.sigmoid(logits)
    return rill.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = _eps(probs.dtype)
    return rill.clamp(probs, min=eps, max=1 - eps)


def one_of(probs, logits, name):
    """Raise ValueError unless exactly one of probs and logits is given."""
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")
