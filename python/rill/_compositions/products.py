"""Products: matrix-vector and batched products with scaling (addmm, baddbmm, ...), dot/outer/kron/tensordot,
einsum."""
import builtins
import collections
import math
import numbers

import rill
from rill._C import Tensor
from rill.amp.autocast_mode import _lower_precision_policy
from rill._compositions._common import _dim, _opmath, _to_integer


# --- products ------------------------------------------------------------------------------------------------------

def _matmul(a, b):
    """a @ b in the dtype a and b promote to (integer products stay integer)."""
    return rill.matmul(a, b).to(rill.promote_types(a.dtype, b.dtype))


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product; input is ignored (NaNs included) when beta is 0. For integer tensors beta
    and alpha are truncated to integers first, as PyTorch casts them to the integer dtype (beta=0.2 drops input,
    alpha=2.6 doubles the product; -1.5 is refused for uint8), so the result stays integer."""
    if not product.dtype.is_floating_point and product.dtype != rill.bool:
        beta, alpha = _to_integer(beta, product.dtype), _to_integer(alpha, product.dtype)
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product + rill.zeros_like(input) if input.dim() > product.dim() else product
    return (input if beta == 1 else input * beta) + product


def _check_dims(name, **tensors):
    for arg, (t, ndim) in tensors.items():
        if t.dim() != ndim:
            raise RuntimeError(f"{name}: {arg} must be a {ndim}-D tensor, got {t.dim()}-D")


def mv(input, vec):
    """Matrix-vector product."""
    _check_dims("mv", input=(input, 2), vec=(vec, 1))
    return _matmul(input, vec)


def dot(input, tensor):
    """The dot product of two 1-D tensors."""
    _check_dims("dot", input=(input, 1), tensor=(tensor, 1))
    if input.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype} and "
                           f"{tensor.dtype}")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
                           f"and {tensor.shape[0]} elements respectively")
    return (input * tensor).sum().to(input.dtype)


def vdot(input, other):
    """The dot product of two 1-D tensors (of real ones: dot)."""
    return dot(input, other)


def outer(input, vec2):
    """The outer product of two 1-D tensors."""
    _check_dims("outer", input=(input, 1), vec2=(vec2, 1))
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def inner(input, other):
    """The inner product over the last dimensions (a product when either is 0-D)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def tensordot(a, b, dims=2, out=None):
    """Sum of products over the dims of a and b given by dims (an int: a's last and b's first dims)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    da, db = [_dim(d, a.dim()) for d in da], [_dim(d, b.dim()) for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    a = a.expand(*[b.shape[db[da.index(i)]] if i in da and a.shape[i] == 1 else s for i, s in enumerate(a.shape)])
    b = b.expand(*[a.shape[da[db.index(j)]] if j in db and b.shape[j] == 1 else s for j, s in enumerate(b.shape)])
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
    fa, fb = [i for i in range(a.dim()) if i not in da], [j for j in range(b.dim()) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    left = a.permute(*(fa + da)).reshape(-1, k)
    right = b.permute(*(db + fb)).reshape(k, -1)
    return _matmul(left, right).reshape([a.shape[i] for i in fa] + [b.shape[j] for j in fb])


def kron(input, other):
    """The Kronecker product."""
    n = builtins.max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape([v for s in sa for v in (s, 1)])
    b = other.reshape([v for s in sb for v in (1, s)])
    return (a * b).reshape([x * y for x, y in zip(sa, sb)])


def trace(input):
    """The sum of a matrix's diagonal."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


@_lower_precision_policy
@_opmath
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    _check_dims("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
    return _scaled_sum(input, _matmul(mat1, mat2), beta, alpha)


@_opmath
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2), elementwise as PyTorch's kernel: input * beta + alpha * v1 * v2
    with beta and alpha in the result's dtype and every step rounded to it (float16 included); input is
    ignored (NaNs included) when beta is 0. Booleans: (beta and input) or (alpha and v1 and v2)."""
    _check_dims("addr", vec1=(vec1, 1), vec2=(vec2, 1))
    a, b = vec1.unsqueeze(1), vec2.unsqueeze(0)
    dtype = rill.promote_types(rill.result_type(input, vec1), vec2.dtype)
    if dtype == rill.bool:
        product = a & b if alpha else rill.zeros((), dtype=rill.bool)
        product = product.expand(vec1.shape[0], vec2.shape[0])
        return product | input if beta else product | rill.zeros_like(input)
    alpha_t, beta_t = rill.tensor(alpha, dtype=dtype), rill.tensor(beta, dtype=dtype)
    product = alpha_t * a.to(dtype) * b.to(dtype)
    if beta == 0:
        return product + rill.zeros_like(input, dtype=dtype)
    return input.to(dtype) * beta_t + product


@_lower_precision_policy
@_opmath
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    _check_dims("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return _scaled_sum(input, _matmul(batch1, batch2), beta, alpha)


@_lower_precision_policy
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1 @ batch2)."""
    _check_dims("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    if batch1.dtype in (rill.float16, rill.bfloat16) and batch1.shape[0] > 0:
        # PyTorch adds one batch at a time (an addmm each, beta for the first only), so a 16-bit result is
        # rounded to its dtype after every batch; summing in float32 first would differ in the last bit
        out = addmm(input, batch1[0], batch2[0], beta=beta, alpha=alpha)
        for b in range(1, batch1.shape[0]):
            out = addmm(out, batch1[b], batch2[b], alpha=alpha)
        return out
    return _addbmm_summed(input, batch1, batch2, beta, alpha)


@_opmath
def _addbmm_summed(input, batch1, batch2, beta, alpha):
    products = _matmul(batch1, batch2)
    return _scaled_sum(input, products.sum(0).to(products.dtype), beta, alpha)  # integer sums stay in their dtype


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in the planes dim1, dim2 of the result) with input's last dimension on their offset diagonal."""
    ndim = input.dim() + 1
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + builtins.abs(offset)
    rows, cols = rill.arange(n).reshape(-1, 1), rill.arange(n).reshape(1, -1)
    mask = (cols - rows) == offset
    index = rill.minimum(rows, cols).clamp(0, builtins.max(input.shape[-1] - 1, 0))
    values = input.index_select(-1, index.reshape(-1)).reshape(tuple(input.shape[:-1]) + (n, n)) if input.shape[
        -1] else rill.zeros(tuple(input.shape[:-1]) + (n, n), dtype=input.dtype)
    out = rill.where(mask, values, rill.zeros((), dtype=input.dtype))
    return rill.movedim(out, (-2, -1), (d1, d2))


def diagflat(input, offset=0):
    """A matrix with input (flattened) on its offset diagonal."""
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors):
    """The tensors (0-D, 1-D or 2-D) as the blocks of a block-diagonal matrix."""
    blocks = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return rill.zeros((1, 0))
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = rill.promote_types(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        parts = [rill.zeros((b.shape[0], left), dtype=dtype), b.to(dtype),
                 rill.zeros((b.shape[0], width - left - b.shape[1]), dtype=dtype)]
        rows.append(rill.cat(parts, 1))
        left += b.shape[1]
    return rill.cat(rows, 0)

# --- einsum --------------------------------------------------------------------------------------------------------

def _einsum_subscripts(term, ndim, ell, position):
    """The symbols of one operand's (or the output's, ndim None) subscripts; '...' stands for ell symbols
    ('...', k), right-aligned across operands."""
    if "..." not in term:
        if ndim is not None and len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({ndim}) for operand {position} and no ellipsis was given")
        return list(term)
    head, tail = term.split("...")
    e = ell if ndim is None else ndim - len(head) - len(tail)
    return list(head) + [("...", ell - e + k) for k in range(e)] + list(tail)


def _einsum_diagonals(x, subs):
    """x with each repeated subscript (ii) reduced to its diagonal."""
    while True:
        dup = next((s for s in subs if subs.count(s) > 1), None)
        if dup is None:
            return x, subs
        p = subs.index(dup)
        q = subs.index(dup, p + 1)
        x = x.diagonal(0, p, q)
        subs = [s for k, s in enumerate(subs) if k not in (p, q)] + [dup]


def _einsum_sum_out(x, subs, keep):
    """x summed over the subscripts not in keep."""
    drop = [k for k, s in enumerate(subs) if s not in keep]
    if not drop:
        return x, subs
    return x.sum(drop), [s for k, s in enumerate(subs) if k not in drop]


def _einsum_pair(a, a_subs, b, b_subs, keep):
    """The contraction of two operands as one batched matrix product; keep: the subscripts needed later."""
    sizes = {}
    for x, subs in ((a, a_subs), (b, b_subs)):
        for s, n in zip(subs, x.shape):
            sizes[s] = builtins.max(sizes.get(s, 1), n)
    batch = [s for s in a_subs if s in b_subs and s in keep]
    contracted = [s for s in a_subs if s in b_subs and s not in keep]
    a_free = [s for s in a_subs if s not in b_subs]
    b_free = [s for s in b_subs if s not in a_subs]

    def arranged(x, subs, order):
        x = x.permute(*[subs.index(s) for s in order]) if order else x
        return x.expand(*[sizes[s] for s in order])
    size = (lambda group: math.prod(sizes[s] for s in group))
    common = rill.result_type(a, b)  # an integer operand summed on its own is int64 by now
    a, b = a.to(common), b.to(common)
    left = arranged(a, a_subs, batch + a_free + contracted).reshape(size(batch), size(a_free), size(contracted))
    right = arranged(b, b_subs, batch + contracted + b_free).reshape(size(batch), size(contracted), size(b_free))
    out = _matmul(left, right).reshape([sizes[s] for s in batch + a_free + b_free])
    return out, batch + a_free + b_free


def _einsum_from_sublists(args):
    """(equation, operands) of einsum's sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    letters = (lambda sub: "".join("..." if v is Ellipsis else "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[v]
                                   for v in sub))
    operands, subs = args[0::2], args[1::2]
    if len(args) % 2:
        operands, output = operands[:-1], "->" + letters(args[-1])
    else:
        output = ""
    return ",".join(letters(sub) for sub in subs) + output, operands


def einsum(equation, *operands):
    """Sums of products of the operands' elements, as the Einstein-summation equation says ('ij,jk->ik');
    also the sublist form einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    if isinstance(equation, Tensor):
        equation, operands = _einsum_from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the equation has {len(terms)} operands but {len(operands)} were given")
    ell = builtins.max([op.dim() - len(t) + 3 for t, op in zip(terms, operands) if "..." in t], default=0)
    subs = [_einsum_subscripts(t, op.dim(), ell, k) for k, (t, op) in enumerate(zip(terms, operands))]
    if arrow:
        out = _einsum_subscripts(rhs, None, ell, "output")
    else:
        counts = collections.Counter(s for ss in subs for s in ss if isinstance(s, str))
        out = [("...", k) for k in range(ell)] + sorted(s for s, c in counts.items() if c == 1)
    for s in out:
        if not builtins.any(s in ss for ss in subs):
            raise RuntimeError(f"einsum(): output subscript {s} does not appear in the equation for any input operand")
    pending = [_einsum_diagonals(op, ss) for op, ss in zip(operands, subs)]
    acc, acc_subs = pending[0]
    for k in range(1, len(pending) + 1):
        later = set(out).union(*[set(ss) for _, ss in pending[k:]])
        acc, acc_subs = _einsum_sum_out(acc, acc_subs, later)
        if k == len(pending):
            break
        b, b_subs = _einsum_sum_out(*pending[k], later | set(acc_subs))
        after = set(out).union(*[set(ss) for _, ss in pending[k + 1:]])
        acc, acc_subs = _einsum_pair(acc, acc_subs, b, b_subs, after)
    return acc.permute(*[acc_subs.index(s) for s in out]) if out else acc

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
