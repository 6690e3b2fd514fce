"""Adafactor (Shazeer & Stern): a second moment factored into row and column means for parameters of two or more
dims, a relative step size and update clipping, PyTorch's update (torch.optim.Adafactor) step for step."""
import rill
from rill.optim.optimizer import Optimizer, _increment_step


_MACHINE_EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


class Adafactor(Optimizer):
    """beta2_t = 1 - step^beta2_decay; the step is lr-bounded 1/sqrt(step) times max(eps2, RMS(p)), the update
    var^-1/2 * g scaled down to RMS <= d."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @rill.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, beta2_decay, d, weight_decay = group["lr"], group["beta2_decay"], group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = rill.tensor(0.0, dtype=rill.float32)
                    if grad.dim() > 1:
                        state["row_var"] = rill.zeros(*grad.shape[:-1], 1, dtype=grad.dtype)
                        state["col_var"] = rill.zeros(*grad.shape[:-2], 1, grad.shape[-1], dtype=grad.dtype)
                    else:
                        state["variance"] = rill.zeros_like(grad)
                e1 = eps1 if eps1 is not None else _MACHINE_EPS[p.dtype.name]
                step = _increment_step(self, p, state)
                one_minus_beta2 = step ** beta2_decay
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(rill.norm(grad, dim=-1, keepdim=True).square_().div_(grad.shape[-1]),
                                  one_minus_beta2)
                    col_var.lerp_(rill.norm(grad, dim=-2, keepdim=True).square_().div_(grad.shape[-2]),
                                  one_minus_beta2)
                    var_estimate = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=e1 * e1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
