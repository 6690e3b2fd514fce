"""ASGD (averaged SGD), PyTorch's update step for step."""
import rill
from rill.optim.optimizer import (Optimizer, _check_no_differentiable, _increment_step, _scalar_state,
                                  _set_scalar_state)


class ASGD(Optimizer):
    """p = p * (1 - lambd * eta) - eta * g; ax averages p from step t0 on (mu = 1 / max(1, step - t0));
    eta = lr / (1 + lambd * lr * step)^alpha. eta and mu are float32 scalars in the state, as PyTorch's."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_no_differentiable("ASGD", differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    state["eta"] = rill.tensor(float(lr), dtype=rill.float32)
                    state["mu"] = rill.tensor(1.0, dtype=rill.float32)
                    state["ax"] = rill.zeros_like(p)
                step = _increment_step(self, p, state)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                eta = _scalar_state(self, p, state, "eta")
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax = state["ax"]
                if _scalar_state(self, p, state, "mu") != 1:
                    ax.add_(p.sub(ax).mul_(state["mu"]))
                else:
                    ax.copy_(p)
                _set_scalar_state(self, p, state, "eta", lr / ((1 + lambd * lr * step) ** alpha))
                _set_scalar_state(self, p, state, "mu", 1 / max(1, step - t0))
        return loss
