"""NAdam (momentum decay, weight decay coupled or decoupled), PyTorch's update step for step."""
import rill
from rill.optim.adamax import _check_betas
from rill.optim.optimizer import (Optimizer, _check_no_differentiable, _increment_step, _round_float32,
                                  _scalar_state, _set_scalar_state)


def _check_adam_args(lr, betas, eps, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    _check_betas(betas)
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _moments(state, p):
    if "exp_avg" not in state:
        state["exp_avg"] = rill.zeros_like(p)
        state["exp_avg_sq"] = rill.zeros_like(p)
    return state["exp_avg"], state["exp_avg_sq"]


class NAdam(Optimizer):
    """Adam with Nesterov momentum: mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)), the product of the mu's
    kept in state['mu_product'] (a float32 scalar, as PyTorch's)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_no_differentiable("NAdam", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            momentum_decay = group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["mu_product"] = rill.tensor(1.0, dtype=rill.float32)
                exp_avg, exp_avg_sq = _moments(state, p)
                step = _increment_step(self, p, state)
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group.get("decoupled_weight_decay", False):
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                # mu_product *= mu on a float32 scalar: both factors float32, the product rounded once
                mu_product = _set_scalar_state(self, p, state, "mu_product",
                                               _scalar_state(self, p, state, "mu_product") * _round_float32(mu))
                mu_product_next = mu_product * mu_next
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product_next))
        return loss
