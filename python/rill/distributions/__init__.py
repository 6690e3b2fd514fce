"""rill.distributions: probability distributions with sampling, reparameterised sampling (rsample),
log_prob, entropy and moments, and kl_divergence between pairs of them, as torch.distributions."""
from rill.distributions import constraints  # noqa: F401
from rill.distributions.continuous import Exponential, Laplace  # noqa: F401
from rill.distributions.distribution import Distribution  # noqa: F401
from rill.distributions.discrete import Bernoulli, Categorical, OneHotCategorical  # noqa: F401
from rill.distributions.independent import Independent  # noqa: F401
from rill.distributions.kl import kl_divergence, register_kl  # noqa: F401
from rill.distributions.multivariate_normal import MultivariateNormal  # noqa: F401
from rill.distributions.normal import Normal, Uniform  # noqa: F401
from rill.distributions import transforms  # noqa: F401
from rill.distributions.transformed_distribution import LogNormal, TransformedDistribution  # noqa: F401
