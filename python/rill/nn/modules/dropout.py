"""Dropout."""
from rill.nn import functional as F
from rill.nn.modules.module import Module


class Dropout(Module):
    """Zeroes elements with probability p in training mode and scales the rest by 1/(1-p)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _FeatureDropout(Dropout):
    _fn = None

    def forward(self, input):
        return getattr(F, self._fn)(input, self.p, self.training, self.inplace)


class Dropout1d(_FeatureDropout):
    """Zeroes whole channels of (N, C, L) input with probability p in training mode."""
    _fn = "dropout1d"


class Dropout2d(_FeatureDropout):
    """Zeroes whole channels of (N, C, H, W) input with probability p in training mode."""
    _fn = "dropout2d"


class Dropout3d(_FeatureDropout):
    """Zeroes whole channels of (N, C, D, H, W) input with probability p in training mode."""
    _fn = "dropout3d"


class AlphaDropout(_FeatureDropout):
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _fn = "alpha_dropout"


class FeatureAlphaDropout(_FeatureDropout):
    """alpha dropout of whole channels."""
    _fn = "feature_alpha_dropout"
