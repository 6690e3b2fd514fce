"""Adagrad (lr decay, weight decay, initial accumulator), PyTorch's update step for step."""
import rill
from rill.optim.optimizer import Optimizer, _check_no_differentiable, _increment_step


class Adagrad(Optimizer):
    """sum += g * g; p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps). Its state is created with
    the optimizer (step 0, sum = initial_accumulator_value), as PyTorch's; a group added later gets it at its
    first step."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_no_differentiable("Adagrad", differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(group, p)

    def _init_state(self, group, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = rill.tensor(0.0, dtype=rill.float32)
            state["sum"] = rill.full_like(p, float(group["initial_accumulator_value"]))
        return state

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self._init_state(group, p)
                step = _increment_step(self, p, state)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = state["sum"]
                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(eps)
                p.addcdiv_(grad, std, value=-clr)
        return loss
