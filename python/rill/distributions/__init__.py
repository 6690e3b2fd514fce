"""rill.distributions: probability distributions with sampling, reparameterised sampling (rsample),
log_prob, entropy and moments, and kl_divergence between pairs of them, as torch.distributions
(one module per distribution, named as PyTorch's)."""
from rill.distributions import constraints, transforms  # noqa: F401
from rill.distributions.bernoulli import Bernoulli  # noqa: F401
from rill.distributions.categorical import Categorical  # noqa: F401
from rill.distributions.distribution import Distribution  # noqa: F401
from rill.distributions.exponential import Exponential  # noqa: F401
from rill.distributions.independent import Independent  # noqa: F401
from rill.distributions.kl import kl_divergence, register_kl  # noqa: F401
from rill.distributions.laplace import Laplace  # noqa: F401
from rill.distributions.log_normal import LogNormal  # noqa: F401
from rill.distributions.multivariate_normal import MultivariateNormal  # noqa: F401
from rill.distributions.normal import Normal  # noqa: F401
from rill.distributions.one_hot_categorical import OneHotCategorical  # noqa: F401
from rill.distributions.transformed_distribution import TransformedDistribution  # noqa: F401
from rill.distributions.uniform import Uniform  # noqa: F401
