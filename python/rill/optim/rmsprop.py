"""RMSprop (centered, momentum, weight decay), PyTorch's update step for step."""
import rill
from rill.optim import _fused
from rill.optim.adam import _lerp_
from rill.optim.optimizer import Optimizer, _increment_step


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("[RMSprop] differentiable=True is not supported")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in _fused.step_in_place(self, "rmsprop", group):  # the loop steps what the fused op can't
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["square_avg"] = rill.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = rill.zeros_like(p)
                    if centered:
                        state["grad_avg"] = rill.zeros_like(p)
                _increment_step(self, p, state)
                square_avg = state["square_avg"]
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg.mul_(alpha).add_(grad * (1 - alpha) * grad)
                if centered:
                    grad_avg = state["grad_avg"]
                    _lerp_(grad_avg, grad, 1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).add_(grad / avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.add_(grad / avg * (-lr))
        return loss
