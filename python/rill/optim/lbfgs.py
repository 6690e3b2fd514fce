"""L-BFGS with a closure: a limited history of curvature pairs (s, y), a fixed step or a line search satisfying
the strong Wolfe conditions (cubic interpolation, Nocedal & Wright's algorithms 3.5 and 3.6), with PyTorch's
stopping tests and state.

The scalars of the method (curvatures, step lengths, directional derivatives) are Python floats read from 0-d
tensors; the vectors are flat tensors of the parameters' dtype. A state dict keeps PyTorch's keys: func_evals,
n_iter, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al.
"""
import rill
from rill.optim.optimizer import Optimizer


def _float(value):
    """A Python float from a float or a 0-d tensor (a loaded state may hold either)."""
    return float(value.item()) if hasattr(value, "item") else float(value)


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to bounds (the
    interval's midpoint when the cubic has no minimum)."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step t along d with sufficient decrease (c1) and curvature (c2), from loss f, gradient g and slope gtd
    at t = 0; evaluate(t) gives (loss, flat gradient) at x + t d. Returns (loss, gradient, t, evaluations)."""
    d_norm = _float(d.abs().max())
    g = g.clone()
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = _float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    # bracketing: grow t until an interval holds a point satisfying the conditions
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
        bracket_gtd = [gtd, gtd_new]
    # zoom: shrink the bracket by cubic interpolation, keeping the lower end's point
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        lo, hi = min(bracket), max(bracket)
        eps = 0.1 * (hi - lo)
        if min(hi - t, t - lo) < eps:  # too close to an end: move it inside, or accept once
            if insuf_progress or t >= hi or t <= lo:
                t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _float(g_new.dot(d))
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS over all parameters as one flat vector (one param group). step(closure) runs up to max_iter
    iterations and returns the first loss; closure re-evaluates the model, calls backward() and returns the
    loss."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return rill.cat([p.grad.reshape(-1) if p.grad is not None else rill.zeros(p.numel(), dtype=p.dtype)
                         for p in self._params], 0)

    def _add_to_params(self, t, d):
        """p += t * d, d flat over all parameters."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[offset:offset + n].view_as(p), alpha=t)
            offset += n

    def _evaluate_along(self, closure, x, t, d):
        """(loss, flat gradient) at x + t d; the parameters are back at x after."""
        self._add_to_params(t, d)
        loss = float(closure())
        flat_grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    @rill.no_grad()
    def step(self, closure):
        """Up to max_iter L-BFGS iterations; returns the loss closure() gave first."""
        if closure is None:
            raise TypeError("[LBFGS.step] needs a closure that re-evaluates the model, calls backward() and returns "
                            "the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError(f"[LBFGS] only 'strong_wolfe' is supported as line_search_fn (or None), got "
                               f"{line_search_fn!r}")

        def evaluate():
            with rill.enable_grad():
                return closure()

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if _float(flat_grad.abs().max()) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                d = self._direction(state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, H_diag,
                                    history_size)
                H_diag = state["H_diag"]
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / _float(flat_grad.abs().sum())) * lr
            else:
                t = lr
            gtd = _float(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction
                break
            evals = 0
            if line_search_fn is not None:
                x = [p.clone() for p in self._params]
                loss, flat_grad, t, evals = _strong_wolfe(
                    lambda step: self._evaluate_along(evaluate, x, step, d), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_to_params(t, d)
                opt_cond = _float(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._add_to_params(t, d)
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate for the next iteration (the last one's is not needed)
                    loss = float(evaluate())
                    flat_grad = self._flat_grad()
                    opt_cond = _float(flat_grad.abs().max()) <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _float(d.mul(t).abs().max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _direction(self, state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, H_diag, history_size):
        """The quasi-Newton direction -H g by the two-loop recursion, after adding the newest curvature pair
        (skipped when y's < 1e-10 would break positive definiteness). Stores H_diag in state."""
        y = flat_grad.sub(prev_flat_grad)
        s = d.mul(_float(t))
        ys = _float(y.dot(s))
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            H_diag = ys / _float(y.dot(y))
        state["H_diag"] = H_diag
        num_old = len(old_dirs)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(num_old - 1, -1, -1):
            al[i] = _float(old_stps[i].dot(q)) * _float(ro[i])
            q.add_(old_dirs[i], alpha=-al[i])
        r = q.mul(_float(H_diag))
        for i in range(num_old):
            be_i = _float(old_dirs[i].dot(r)) * _float(ro[i])
            r.add_(old_stps[i], alpha=_float(al[i]) - be_i)
        return r
