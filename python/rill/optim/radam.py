"""RAdam (the rectified Adam, weight decay coupled or decoupled), PyTorch's update step for step."""
import rill
from rill.optim.nadam import _check_adam_args, _moments
from rill.optim.optimizer import Optimizer, _check_no_differentiable, _increment_step


class RAdam(Optimizer):
    """Adam whose adaptive step is rectified by r_t once the variance estimate is tractable (rho_t > 5), and
    plain momentum SGD with bias correction before."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_no_differentiable("RAdam", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
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
                exp_avg, exp_avg_sq = _moments(state, p)
                step = _increment_step(self, p, state)
                if weight_decay != 0:
                    if group.get("decoupled_weight_decay", False):
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add_(eps)
                    p.sub_(bias_corrected_exp_avg * lr * adaptive_lr * rect)
                else:
                    p.sub_(bias_corrected_exp_avg * lr)
        return loss
