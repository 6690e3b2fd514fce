"""Adamax (Adam with the infinity norm), PyTorch's update step for step."""
import rill
from rill.optim.optimizer import Optimizer, _check_no_differentiable, _increment_step


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


class Adamax(Optimizer):
    """exp_avg = lerp(exp_avg, g, 1 - beta1); exp_inf = max(beta2 * exp_inf, |g| + eps);
    p -= lr / (1 - beta1^step) * exp_avg / exp_inf."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_no_differentiable("Adamax", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["exp_avg"] = rill.zeros_like(p)
                    state["exp_inf"] = rill.zeros_like(p)
                step = _increment_step(self, p, state)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.copy_(rill.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                clr = lr / (1 - beta1 ** step)
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
