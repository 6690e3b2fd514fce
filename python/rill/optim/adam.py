"""Adam and AdamW (amsgrad, maximize, weight decay coupled or decoupled), PyTorch's update step for step."""
import math

import rill
from rill.optim import _fused
from rill.optim.optimizer import Optimizer, _increment_step


def _lerp_(start, end, weight):
    """start.lerp_(end, weight) with PyTorch's formula for a scalar weight."""
    if weight < 0.5:
        return start.add_((end - start) * weight)
    return start.copy_(end - (end - start) * (1 - weight))


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError(f"[{type(self).__name__}] differentiable=True is not supported")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            amsgrad, maximize = group["amsgrad"], group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p in _fused.step_in_place(self, "adam", group):  # the loop steps what the fused op can't
                grad = p.grad if not maximize else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["exp_avg"] = rill.zeros_like(p)
                    state["exp_avg_sq"] = rill.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = rill.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                step = _increment_step(self, p, state)
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = math.sqrt(bias_correction2)
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(rill.maximum(max_sq, exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.add_(exp_avg / denom * (-step_size))
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the Adam step), weight_decay=1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
