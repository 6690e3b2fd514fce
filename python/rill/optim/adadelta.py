"""Adadelta (rho, eps, weight decay), PyTorch's update step for step."""
import rill
from rill.optim.optimizer import Optimizer, _check_no_differentiable, _increment_step


class Adadelta(Optimizer):
    """square_avg = rho * square_avg + (1 - rho) * g^2; delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g;
    acc_delta = rho * acc_delta + (1 - rho) * delta^2; p -= lr * delta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_no_differentiable("Adadelta", differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["square_avg"] = rill.zeros_like(p)
                    state["acc_delta"] = rill.zeros_like(p)
                _increment_step(self, p, state)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
