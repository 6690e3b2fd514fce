"""Rprop (resilient backpropagation), PyTorch's update step for step."""
import rill
from rill.optim.optimizer import Optimizer, _check_no_differentiable, _increment_step


class Rprop(Optimizer):
    """Each element's step size grows by etas[1] while its gradient keeps its sign and shrinks by etas[0] when
    the sign flips (that step is then skipped), within step_sizes; p -= sign(g) * step_size."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_no_differentiable("Rprop", differentiable)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["prev"] = rill.zeros_like(p)
                    state["step_size"] = rill.full_like(grad, float(group["lr"]))
                _increment_step(self, p, state)
                prev, step_size = state["prev"], state["step_size"]
                sign = grad.mul(prev).sign()
                factor = rill.where(sign > 0, etaplus, rill.where(sign < 0, etaminus, 1.0)).to(p.dtype)
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = rill.where(sign < 0, 0.0, grad).to(p.dtype)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
