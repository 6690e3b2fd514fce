"""SparseAdam: PyTorch's Adam for sparse gradients. rill has no sparse tensors, so every gradient is dense and
step() refuses it, as PyTorch's SparseAdam refuses a dense gradient; the constructor checks its arguments as
PyTorch's does, so code that builds one fails at its first step with a message naming the replacement."""
from rill.optim.optimizer import Optimizer


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure=None):
        """RuntimeError at the first parameter with a gradient (a dense one: rill has no sparse gradients)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead "
                                       "(rill has no sparse gradients: nn.Embedding(sparse=True) gives dense ones)")
        return loss
