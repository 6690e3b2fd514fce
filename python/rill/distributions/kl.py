"""kl_divergence(p, q) = KL(p || q), dispatched on the pair of types through a registry (register_kl)."""
import rill
from rill.distributions.bernoulli import Bernoulli
from rill.distributions.categorical import Categorical
from rill.distributions.exponential import Exponential
from rill.distributions.independent import Independent, _sum_rightmost
from rill.distributions.laplace import Laplace
from rill.distributions.multivariate_normal import MultivariateNormal, _half_log_det, _solve_lower
from rill.distributions.normal import Normal
from rill.distributions.one_hot_categorical import OneHotCategorical
from rill.distributions.uniform import Uniform

_KL_REGISTRY = {}
_KL_CACHE = {}


def register_kl(type_p, type_q):
    """Decorator registering fn(p, q) as KL(p || q) for p of type_p and q of type_q (subclasses included)."""
    if not (isinstance(type_p, type) and isinstance(type_q, type)):
        raise TypeError("register_kl: expected two Distribution subclasses")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_CACHE.clear()
        return fn

    return decorator


def _dispatch(type_p, type_q):
    """The registered function for the most specific matching pair of base classes."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    best = min(matches, key=lambda pair: (type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    """KL(p || q), batched over the distributions' batch shape; NotImplementedError for an unregistered pair."""
    key = (type(p), type(q))
    if key not in _KL_CACHE:
        _KL_CACHE[key] = _dispatch(*key)
    fn = _KL_CACHE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} "
                                  f"and q type {type(q).__name__}")
    return fn(p, q)


def _inf_like(x):
    return rill.full_like(x, float("inf"))


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - rill.log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = rill.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = rill.where(q.probs == 0, _inf_like(t1), t1)
    t1 = rill.where(p.probs == 0, rill.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = rill.where(q.probs == 1, _inf_like(t2), t2)
    t2 = rill.where(p.probs == 1, rill.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = rill.where((q.probs == 0).expand(tuple(t.shape)), _inf_like(t), t)
    t = rill.where((p.probs == 0).expand(tuple(t.shape)), rill.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = rill.log((q.high - q.low) / (p.high - p.low))
    outside = (q.low > p.low) | (q.high < p.high)
    return rill.where(outside, _inf_like(result), result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    n = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = _half_log_det(Lq) - _half_log_det(Lp)
    batch = rill.broadcast_shapes(tuple(Lp.shape[:-2]), tuple(Lq.shape[:-2]))
    # tr(Sigma_q^-1 Sigma_p) = ||Lq^-1 Lp||_F^2
    M = rill.linalg.solve_triangular(Lq.expand(batch + (n, n)), Lp.expand(batch + (n, n)), upper=False)
    term2 = M.pow(2).sum(-1).sum(-1)
    term3 = _solve_lower(Lq, q.loc - p.loc).pow(2).sum(-1)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rill.log(rate_ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -rill.log(scale_ratio) + loc_abs_diff / q.scale + scale_ratio * rill.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions with different reinterpreted_batch_ndims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
