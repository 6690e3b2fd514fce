"""Run PyTorch's own op and module databases through rill and compare with PyTorch.

The databases are ``torch.testing._internal.common_methods_invocations.op_db`` (OpInfos) and
``torch.testing._internal.common_modules.module_db`` (ModuleInfos). For each entry,
``check_op``/``check_module`` return None when every checked sample agrees with PyTorch,
``"missing"`` when rill lacks the op or module, or ``"fails: <short reason>"`` naming the first
disagreement. test_conformance.py compares these against expected.json; update_expected.py
writes that file.

What is checked, per OpInfo, on CPU:
- dtypes: the OpInfo's supported CPU dtypes among rill's (float32, float64, float16, bfloat16,
  the integer dtypes and bool); complex ones are out of scope;
- values: the function (``rill.<name>``, ``rill.nn.functional.<name>`` for ``nn.functional.*``,
  ``rill.linalg.<name>`` for ``linalg.*``, ...; ``rill.Tensor.<name>`` for dunder names), the
  method and the in-place variant where the OpInfo declares them, against PyTorch's result,
  with ``torch.testing.assert_close``'s default tolerances raised to the OpInfo's CPU
  tolerance overrides; random and uninitialised results (RANDOM_OPS) compare shape and dtype;
  results unique only up to a gauge (GAUGE_OUTPUTS: eigenvector signs) compare through the
  sample's output_process_fn_grad; an op PyTorch's tests run from seed 42 runs from it in rill too;
- gradients, on float64, for an OpInfo that supports autograd: the gradient of the sum of the
  (output_process_fn_grad-processed) floating outputs, with respect to every input tensor
  (against central differences where PyTorch's own backward is wrong: TORCH_GRAD_WRONG).
A sample's view keeps its storage (as_strided can read around it), and a torch module passed
as an argument becomes rill's module of that class with the same configuration and state.
Per ModuleInfo: float32 and float64 where the ModuleInfo supports them, in training mode: the
module built from each module input's constructor arguments, PyTorch's state_dict loaded into
rill's module, forward outputs compared, then on float64 the gradients of the summed outputs with
respect to the inputs and the parameters.
Gradients of gradients (check_op_gradgrad, check_module_gradgrad), on the first GRADGRAD_SAMPLES float64
samples of each OpInfo that supports gradgrad and of each ModuleInfo: the first-order gradients taken with
create_graph=True, then the gradient of their sum weighted by fixed uneven weights, against PyTorch's (but at
points where the second derivative is undefined: GRADGRAD_UNDEFINED); expected.json lists what fails under
"gradgrad".

Samples: at most SAMPLES_PER_DTYPE per op (or module) and dtype, and GRAD_SAMPLES for
gradients, the first ones the database yields, so the suite stays inside CI's time (today's
databases have fewer for almost every op: the whole run takes about 25 s on 2 cores). A sample
PyTorch itself rejects (it raises) is skipped, and so is one holding something rill cannot
hold (a complex tensor, a torch.Generator, a sparse layout).
"""
import json
import pathlib

import numpy as np
import torch
import torch.testing._comparison as torch_comparison
import torch.testing._internal.opinfo.core as opinfo_core

import rill

SAMPLES_PER_DTYPE = 64
GRAD_SAMPLES = 32
GRADGRAD_SAMPLES = 2
# Second derivatives at a point where they are not defined: PyTorch's value there is an accident of its formula.
GRADGRAD_UNDEFINED = {
    "linalg.norm.subgradients_at_zero": "the Hessian of a norm is unbounded at 0: PyTorch gives NaN, rill 0",
}
GRADGRAD_CHECKED = set()  # the OpInfos whose gradgrad check compared at least one sample
EXPECTED_PATH = pathlib.Path(__file__).with_name("expected.json")

RILL_DTYPES = {d: getattr(rill, str(d).split(".")[-1]) for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.uint8, torch.int8,
    torch.int16, torch.int32, torch.int64)}
TORCH_DTYPES = {str(r): t for t, r in RILL_DTYPES.items()}

# Ops whose values are random or uninitialised: only their shape and dtype are compared.
RANDOM_OPS = {
    "bernoulli", "cauchy", "empty", "empty_like", "empty_permuted", "empty_strided", "exponential",
    "geometric", "log_normal", "multinomial", "new_empty", "new_empty_strided", "normal", "rand_like",
    "randint", "randint_like", "randn", "randn_like", "uniform", "nn.functional.alpha_dropout",
    "nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "torch._C._nn._test_optional_floatlist",
}
# Ops returning indices that may point at any of several equal elements: {name: (position of
# the indices among the outputs, or None for a lone output; position of dim among the arguments
# after the input)}. Unless the sample asks for a stable sort, rill's indices are right when
# they pick the same values as PyTorch's.
TIE_INDICES = {"sort": (1, 0), "argsort": (None, 0), "topk": (1, 1), "kthvalue": (1, 1), "msort": (None, None)}
# Ops whose OpInfo lambda builds the input from factors (a @ b.mT) before calling the function (their outputs
# are defined only up to signs, see GAUGE_OUTPUTS): rill's counterpart takes the same factors.
FACTORED_INPUT = {"svd_lowrank", "pca_lowrank"}
# Ops whose result is unique only up to a gauge, so that two correct LAPACKs (PyTorch's MKL, rill's OpenBLAS)
# may return different ones: both results are compared after the sample's output_process_fn_grad, the
# gauge-invariant view PyTorch's own tests use. Nothing else is compared this way.
#   op                        gauge                                          what the sample compares
#   linalg.eigh               each eigenvector's sign (distinct eigenvalues) eigenvalues, |eigenvectors|
#   linalg.svd, svd           one sign per U column and its V column; the    |U|, S, |Vh| or U @ Vh, of the
#                             full_matrices extra columns: any orthonormal   first k columns of U and rows
#                             basis of the complement                        of Vh
#   svd_lowrank, pca_lowrank  as svd (of the rank-q approximation)           U @ V^H and S
GAUGE_OUTPUTS = {"linalg.eigh", "linalg.svd", "svd", "svd_lowrank", "pca_lowrank"}
# Ops whose OpInfo op is a wrapper that builds the arguments of the op it names: the same wrapper in rill's
# terms.
def _max_pool2d_backward(x, kernel_size=(), stride=(), padding=(0,), dilation=(1,), ceil_mode=False, **kwargs):
    out, indices = rill.nn.functional.max_pool2d(x, kernel_size, stride or None, padding, dilation, ceil_mode,
                                                 return_indices=True)
    return rill.max_pool2d_with_indices_backward(rill.ones_like(out), x, kernel_size, stride or kernel_size,
                                                 padding, dilation, ceil_mode, indices)


OPINFO_WRAPPERS = {"max_pool2d_with_indices_backward": _max_pool2d_backward}
# Ops taking dropout_p positionally: {name: its position among the arguments after the input}.
DROPOUT_ARG = {"nn.functional.multi_head_attention_forward": 9}
# Ops whose OpInfo lambda takes the tensor first but whose function takes it second (polygamma(n, input),
# where(condition, input, other), einsum(equation, tensors), embedding(indices, weight)).
INPUT_SECOND = {"polygamma", "special.polygamma", "where", "einsum", "nn.functional.embedding",
                "nn.functional.embedding_bag"}
# OpInfo variants whose op is a lambda composing the function with other ops: the same composition in rill.
VARIANT_LAMBDAS = {
    "linalg.pinv.singular": lambda a, b: rill.linalg.pinv(a @ b.mT),
    "linalg.lstsq.grad_oriented": lambda a, b, driver: rill.linalg.lstsq(a, b, driver=driver)[:2],
}
# Ops whose PyTorch backward is wrong (their OpInfo expects TestBwdGradients.test_fn_grad, PyTorch's own
# gradcheck, to fail): rill's gradients are compared with central differences of PyTorch's forward instead.
# as_strided_scatter: PyTorch keeps the gradient inside the scattered region and zeroes it outside, the
# reverse of d(out)/d(input), whose scattered region is overwritten by src.
TORCH_GRAD_WRONG = {"as_strided_scatter"}
# Ops and dtypes whose PyTorch values are wrong on CPU, and the reference they are compared with instead:
# "float64", PyTorch's float64 result rounded to the dtype; "ref", the OpInfo's own NumPy/SciPy reference.
# matrix_exp in float16/bfloat16: PyTorch's mexp reads its float64 coefficient tables as 16-bit values (1/6 and
# 1/24 become 0), giving NaN for every float16 sample and 0 for a matrix near 1e-5, whose exponential is near
# the identity. bessel_j0/j1/y1 in float64: PyTorch's Cephes rationals leave out the implicit leading 1 of
# their denominators, off by up to 4e-7 just above x = 5 (SciPy and mpmath agree with rill to 1e-16).
TORCH_VALUES_WRONG = {
    "matrix_exp": ({torch.float16, torch.bfloat16}, "float64"),
    "special.bessel_j0": ({torch.float64}, "ref"),
    "special.bessel_j1": ({torch.float64}, "ref"),
    "special.bessel_y1": ({torch.float64}, "ref"),
}
# Modules whose outputs are random in training mode: only shape and dtype are compared.
RANDOM_MODULES = {"nn.FractionalMaxPool2d", "nn.FractionalMaxPool3d", "nn.RReLU", "nn.Dropout",
                  "nn.Dropout1d", "nn.Dropout2d", "nn.Dropout3d", "nn.AlphaDropout"}


class Unsupported(Exception):
    """A sample holds something rill has no counterpart for; the sample is skipped."""


class Mismatch(Exception):
    """rill disagrees with PyTorch (a wrong value, or an error where PyTorch has a result)."""


# --- conversion between torch and rill ------------------------------------------------------------------------------

def to_rill(x, leaves):
    """x (a sample's input, argument or keyword value) with each torch thing replaced by rill's.

    A tensor becomes a rill tensor with the same values (once per torch tensor: leaves maps
    id(torch tensor) -> (torch tensor, rill tensor), so aliased arguments stay aliased); one that
    requires grad becomes a rill leaf that requires grad. A view into a larger storage (base[5:15])
    becomes the same view of a rill copy of that whole storage, so an op that reads the storage
    around the view (as_strided with a storage_offset) sees what PyTorch's sees."""
    if isinstance(x, torch.Tensor):
        if id(x) in leaves:
            return leaves[id(x)][1]
        if x.dtype not in RILL_DTYPES or x.layout != torch.strided or x.is_conj() or x.is_neg():
            raise Unsupported(f"tensor of {x.dtype}, {x.layout}")
        data = x.detach()
        storage = data.new_empty(0).set_(data.untyped_storage())
        if x._base is not None and storage.numel() > data.numel():
            r = to_rill(storage, {}).as_strided(tuple(data.shape), data.stride(), data.storage_offset())
        elif data.dtype == torch.bfloat16:
            r = rill.tensor(data.float().numpy().copy()).to(rill.bfloat16)
        else:
            r = rill.tensor(data.numpy().copy())
        if x.requires_grad:
            r.requires_grad_()
        leaves[id(x)] = (x, r)
        return r
    if isinstance(x, torch.dtype):
        if x not in RILL_DTYPES:
            raise Unsupported(f"dtype {x}")
        return RILL_DTYPES[x]
    if isinstance(x, torch.device):
        if x.type != "cpu":
            raise Unsupported(f"device {x}")
        return "cpu"
    if isinstance(x, torch.memory_format):
        name = str(x).split(".")[-1]
        if not hasattr(rill, name):
            raise Mismatch(f"rill.{name} missing")
        return getattr(rill, name)
    if isinstance(x, torch.Generator):
        raise Unsupported("torch.Generator")
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.nn.Module):
        return module_to_rill(x)
    if callable(x) and str(getattr(x, "__module__", None)).startswith("torch"):
        fn = getattr(rill.nn.functional, x.__name__, None) or getattr(rill, x.__name__, None)
        if fn is None:
            raise Mismatch(f"no rill counterpart of torch's {x.__name__}")
        return fn
    if isinstance(x, (list, tuple)):
        return type(x)(to_rill(v, leaves) for v in x) if type(x) in (list, tuple) else tuple(
            to_rill(v, leaves) for v in x)
    if isinstance(x, dict):
        return {k: to_rill(v, leaves) for k, v in x.items()}
    return x


# The constructor arguments of a torch module passed as an argument (a loss's distance_function, the layer a
# TransformerEncoder copies), read back from what the module keeps: {class name: module -> keyword arguments}.
MODULE_CONFIG = {
    "PairwiseDistance": lambda m: dict(p=m.norm, eps=m.eps, keepdim=m.keepdim),
    "TransformerEncoderLayer": lambda m: dict(
        d_model=m.self_attn.embed_dim, nhead=m.self_attn.num_heads, dim_feedforward=m.linear1.out_features,
        dropout=m.dropout.p, activation=m.activation, layer_norm_eps=m.norm1.eps,
        batch_first=m.self_attn.batch_first, norm_first=m.norm_first, bias=m.linear1.bias is not None),
}


def module_to_rill(module):
    """rill's module of the same class as a torch module, built with its constructor arguments (MODULE_CONFIG)
    and holding its state_dict, in its dtype and training mode."""
    name = type(module).__name__
    cls = getattr(rill.nn, name, None)
    if cls is None:
        raise Mismatch(f"no rill.nn.{name}")
    if name not in MODULE_CONFIG:
        raise Unsupported(f"a torch module ({name}) as an argument")
    try:
        r = cls(**to_rill(MODULE_CONFIG[name](module), {}))
        params = list(module.parameters())
        if params:
            r = r.to(RILL_DTYPES[params[0].dtype])
        r.load_state_dict({k: to_rill(v.detach(), {}) for k, v in module.state_dict().items()})
        r.train(module.training)
    except Exception as e:
        raise Mismatch(f"rill.nn.{name} from torch's: {short(e)}") from None
    return r


def to_torch(x):
    """A rill result with each rill tensor copied into a torch tensor (for comparing)."""
    if isinstance(x, rill.Tensor):
        if str(x.dtype) == "rill.bfloat16":
            return torch.from_numpy(np.array(x.float().detach().numpy())).to(torch.bfloat16)
        return torch.from_numpy(np.array(x.detach().numpy()))
    if isinstance(x, rill.dtype):
        return TORCH_DTYPES.get(str(x), x)
    if isinstance(x, (list, tuple)):
        return [to_torch(v) for v in x]
    return x


# --- comparison -----------------------------------------------------------------------------------------------------

def tolerances(op):
    """{torch dtype: (rtol, atol)}: assert_close's defaults, raised to the OpInfo's CPU overrides."""
    tols = {d: tuple(v) for d, v in torch_comparison._DTYPE_PRECISIONS.items()}
    for info in getattr(op, "decorators", ()) or ():
        if getattr(info, "device_type", None) not in (None, "cpu"):
            continue
        for deco in getattr(info, "decorators", ()):
            overrides = getattr(deco, "d", None)
            if not isinstance(overrides, dict):
                continue
            for dtype, tol in overrides.items():
                rtol, atol = (tol.rtol, tol.atol) if hasattr(tol, "rtol") else (0.0, float(tol))
                base = tols.get(dtype, (0.0, 0.0))
                tols[dtype] = (max(base[0], rtol), max(base[1], atol))
    return tols


def assert_same(actual, expected, tols, values=True, what="output"):
    """rill's result (converted by to_torch) equals PyTorch's: structure, dtypes, shapes, values."""
    if isinstance(expected, torch.Tensor):
        if isinstance(actual, (bool, int, float)) and expected.dim() == 0:
            actual = torch.tensor(actual, dtype=expected.dtype)
        if not isinstance(actual, torch.Tensor):
            raise Mismatch(f"{what}: {type(actual).__name__} where torch has a Tensor")
        if actual.dtype != expected.dtype:
            raise Mismatch(f"{what}: dtype {actual.dtype} vs torch {expected.dtype}")
        if tuple(actual.shape) != tuple(expected.shape):
            raise Mismatch(f"{what}: shape {tuple(actual.shape)} vs torch {tuple(expected.shape)}")
        if not values:
            return
        rtol, atol = tols.get(expected.dtype, (0.0, 0.0))
        try:
            torch.testing.assert_close(actual, expected.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                       check_stride=False)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            raise Mismatch(f"{what}: values differ ({lines[1] if len(lines) > 1 else lines[0]})") from None
        return
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise Mismatch(f"{what}: {type(actual).__name__} where torch has {len(expected)} results")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, tols, values, f"{what}[{i}]")
        return
    if isinstance(expected, (bool, int, float)) and not isinstance(expected, torch.dtype):
        if isinstance(actual, torch.Tensor) and actual.dim() == 0:
            actual = actual.item()
        if not isinstance(actual, (bool, int, float)):
            raise Mismatch(f"{what}: {type(actual).__name__} where torch has {type(expected).__name__}")
        if values and not (actual == expected or (actual != actual and expected != expected) or (
                isinstance(expected, float) and abs(actual - expected) <= 1e-5 + 1e-5 * abs(expected))):
            raise Mismatch(f"{what}: {actual!r} vs torch {expected!r}")
        return
    if actual != expected:
        raise Mismatch(f"{what}: {actual!r} vs torch {expected!r}")


def floating_tensors(x):
    """The floating tensors in a (nested) result that carry gradient, in order."""
    if isinstance(x, (torch.Tensor, rill.Tensor)):
        return [x] if x.dtype.is_floating_point and x.requires_grad else []
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in floating_tensors(v)]
    return []


def short(e):
    """'TypeError: first line of the message', at most 110 characters."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = f"{type(e).__name__}: {text}" if not isinstance(e, Mismatch) else text
    return text if len(text) <= 110 else text[:107] + "..."


# --- ops ------------------------------------------------------------------------------------------------------------

def op_key(op):
    """The op's name in expected.json: its OpInfo name, with the variant after a dot."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def rill_dtypes(supported):
    """The dtypes of a set of torch dtypes that rill has, in a fixed order."""
    return [d for d in RILL_DTYPES if d in supported]


def in_scope(op):
    """An OpInfo applies when it supports some of rill's dtypes on CPU and is not marked CUDA-only: the
    jiterator OpInfos list CPU dtypes, but their op is torch.cuda.jiterator's compiled CUDA kernel, and
    PyTorch's own tests run them on CUDA alone (the onlyCUDA decorator)."""
    from torch.testing._internal.common_device_type import onlyCUDA
    return bool(rill_dtypes(op.supported_dtypes("cpu"))) and onlyCUDA not in (op.decorators or ())


def rill_function(name):
    """rill's counterpart of the OpInfo name (``nn.functional.relu`` -> rill.nn.functional.relu), or None.

    A name that is only a Tensor attribute (``item``, ``zero_``; the properties ``T``, ``mT``) is
    called or read on the input, as the OpInfo's own lambda does on torch's."""
    if name.startswith("__") and name.endswith("__"):
        return getattr(rill.Tensor, name, None)
    if name.startswith("torch.ops.aten.") and name.endswith(".default"):  # an aten overload: rill.<its name>
        name = name[len("torch.ops.aten."):-len(".default")]
    obj = rill
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and name.endswith("_") and "." not in name and callable(obj):
        fn = obj  # an in-place function (rill.zero_): on a copy, as the OpInfo's lambda does
        return lambda x, *args, **kwargs: fn(x.clone(), *args, **kwargs)
    if obj is not None:
        return obj if callable(obj) else None
    if "." not in name and not hasattr(torch.Tensor, name) and hasattr(torch.Tensor, name + "_") and hasattr(
            rill.Tensor, name + "_"):
        # an OpInfo named for an in-place method alone (uniform, cauchy, ...): its op fills a copy, as here
        return lambda x, *args, **kwargs: getattr(x.clone(), name + "_")(*args, **kwargs)
    if "." in name or not hasattr(torch.Tensor, name) or not hasattr(rill.Tensor, name):
        return None
    if isinstance(getattr(torch.Tensor, name), property) or type(getattr(torch.Tensor, name)).__name__ == (
            "getset_descriptor"):
        return lambda x: getattr(x, name)
    if name.endswith("_"):  # in-place: on a copy, as the OpInfo's lambda does
        return lambda x, *args, **kwargs: getattr(x.clone(), name)(*args, **kwargs)
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def variant_name(variant, fallback):
    name = getattr(variant, "__name__", None)
    return fallback if not name or name == "<lambda>" else name


def call_torch(fn, sample, inplace=False):
    """PyTorch's result for a sample, or raises Unsupported when PyTorch rejects it."""
    inp = sample.input.clone() if inplace else sample.input
    try:
        out = fn(inp, *sample.args, **sample.kwargs)
    except Exception as e:
        raise Unsupported(f"torch raises {type(e).__name__}") from None
    return inp if inplace else out


def float64_reference(fn, sample, inplace=False):
    """fn's result on sample computed in float64 and rounded to the sample's dtype (TORCH_VALUES_WRONG)."""
    dtype = sample.input.dtype

    def up(x):
        if isinstance(x, torch.Tensor) and x.dtype == dtype:
            return x.double()
        if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
            return type(x)(up(v) for v in x)
        return x
    wide = opinfo_core.SampleInput(up(sample.input), args=up(sample.args), kwargs=up(sample.kwargs))
    out = call_torch(fn, wide, inplace)

    def down(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
            return x.to(dtype)
        return type(x)(down(v) for v in x) if isinstance(x, (list, tuple)) and type(x) in (list, tuple) else x
    return down(out)


def numpy_reference(op, fn, sample, inplace=False):
    """The OpInfo's NumPy/SciPy reference (op.ref) on a unary sample, as a tensor of the sample's dtype
    (TORCH_VALUES_WRONG); the torch variant fn only says where the result goes."""
    if sample.args or sample.kwargs:
        return call_torch(fn, sample, inplace)
    out = torch.from_numpy(np.asarray(op.ref(sample.input.detach().numpy()))).to(sample.input.dtype)
    return out.reshape(sample.input.shape)


def check_op_sample(op, rill_fn, method, inplace, sample, tols, random):
    """Compare function, method and in-place results of one sample (values only)."""
    dtypes, kind = TORCH_VALUES_WRONG.get(op.name, ((), None))
    reference = call_torch
    if isinstance(sample.input, torch.Tensor) and sample.input.dtype in dtypes:
        reference = float64_reference if kind == "float64" else (
            lambda fn, sample, inplace=False: numpy_reference(op, fn, sample, inplace))
    expected = reference(op.op, sample)
    gauge = op.name in GAUGE_OUTPUTS
    if gauge:
        expected = sample.output_process_fn_grad(expected)
        rill_fn = (lambda fn: lambda *a, **k: sample.output_process_fn_grad(fn(*a, **k)))(rill_fn)
    random = random or draws_dropout(op, sample)
    leaves = {}
    args = to_rill((sample.input, sample.args, sample.kwargs), leaves)
    if rill_fn is not None:
        run_rill("function", lambda: rill_fn(args[0], *args[1], **args[2]), expected, tols, random, sample, op)
    if method is not None and isinstance(sample.input, torch.Tensor):
        expected = reference(op.method_variant, sample)
        m = getattr(rill.Tensor, method, None)
        if m is None:
            raise Mismatch(f"no Tensor.{method}")
        if gauge:
            expected = sample.output_process_fn_grad(expected)
            m = (lambda fn: lambda *a, **k: sample.output_process_fn_grad(fn(*a, **k)))(m)
        run_rill("method", lambda: m(args[0], *args[1], **args[2]), expected, tols, random, sample, op)
    if inplace is not None and isinstance(sample.input, torch.Tensor):
        try:
            expected = reference(op.inplace_variant, sample, inplace=True)
        except Unsupported:
            return
        m = getattr(rill.Tensor, inplace, None)
        if m is None and op.name.startswith("nn.functional.") and rill_fn is not None:
            # torch.nn.functional's in-place variants are functions (celu_) or the function with inplace=True
            m = getattr(rill.nn.functional, inplace, None) or (
                lambda x, *a, **k: rill_fn(x, *a, inplace=True, **k))
        if m is None:
            raise Mismatch(f"no Tensor.{inplace}")

        def run_inplace():
            x = args[0].clone()
            m(x, *args[1], **args[2])
            return x
        run_rill("in-place", run_inplace, expected, tols, random)


def run_rill(what, fn, expected, tols, random, sample=None, op=None):
    """Run rill's variant and compare its result with PyTorch's (expected)."""
    try:
        actual = to_torch(fn())
    except (Mismatch, Unsupported):
        raise
    except Exception as e:
        raise Mismatch(f"{what}: {short(e)}") from None
    if op is not None and op.name in TIE_INDICES:
        actual = indices_up_to_ties(op.name, sample, actual, expected)
    try:
        assert_same(actual, expected, tols, values=not random)
    except Mismatch as e:
        if op is None or not as_accurate_as_torch(op, sample, actual, expected):
            raise Mismatch(f"{what} {e}") from None


def tensors_of(x, floating):
    """The floating (or, floating=False, the other) tensors of a (nested) result, in order."""
    if isinstance(x, torch.Tensor):
        return [x] if x.dtype.is_floating_point == floating else []
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors_of(v, floating)]
    return []


def floats_of(x):
    """The floating tensors of a (nested) result, in order."""
    return tensors_of(x, floating=True)


def as_accurate_as_torch(op, sample, actual, expected):
    """Whether rill's float16/bfloat16/float32 result, which differs from PyTorch's by more than
    the tolerance, is as close to a float64 reference as PyTorch's is: each output's largest error
    at most twice PyTorch's, plus the dtype's atol. Rounding and summation order then explain
    the difference (a 3x3 convolution summing to 355 differs in float32 by 1e-4)."""
    def up(x):
        if isinstance(x, torch.Tensor):
            return x.detach().double() if x.dtype in (torch.float16, torch.bfloat16, torch.float32) else x
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            return type(x)(up(v) for v in x) if type(x) in (list, tuple) else x
        if isinstance(x, dict):
            return {k: up(v) for k, v in x.items()}
        return x
    got, want = floats_of(actual), floats_of(expected)
    if not want or len(got) != len(want) or any(g.shape != w.shape or g.dtype != w.dtype for g, w in zip(got, want)):
        return False
    if any(w.dtype not in (torch.float16, torch.bfloat16, torch.float32) for w in want):
        return False
    try:
        refs = floats_of(op.op(up(sample.input), *up(sample.args), **up(sample.kwargs)))
    except Exception:
        return False
    if len(refs) != len(want):
        return False
    for g, w, r in zip(got, want, refs):
        g, w, r = g.double(), w.double(), r.double()
        finite = torch.isfinite(r)
        if not torch.equal(torch.isfinite(g), torch.isfinite(w)) or not torch.equal(g[~finite], w[~finite]):
            return False
        atol = torch_comparison._DTYPE_PRECISIONS[want[0].dtype][1]
        rill_error, torch_error = (g - r)[finite].abs(), (w - r)[finite].abs()
        if rill_error.numel() and rill_error.max() > 2 * torch_error.max() + atol:
            return False
    # integer outputs (indices) must still agree exactly
    got_ints, want_ints = tensors_of(actual, floating=False), tensors_of(expected, floating=False)
    return len(got_ints) == len(want_ints) and all(
        g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w) for g, w in zip(got_ints, want_ints))


def indices_up_to_ties(op_name, sample, actual, expected):
    """actual with its indices replaced by PyTorch's where both pick equal values (see TIE_INDICES)."""
    position, dim_at = TIE_INDICES[op_name]
    if sample.kwargs.get("stable") or not isinstance(sample.input, torch.Tensor) or sample.input.dim() == 0:
        return actual
    dim = sample.kwargs.get("dim", sample.args[dim_at] if dim_at is not None and len(sample.args) > dim_at else -1)
    got = actual if position is None else actual[position] if isinstance(actual, list) else None
    want = expected if position is None else expected[position]
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
        return actual
    x = sample.input.detach()
    try:
        g, w = got, want
        if got.dim() == x.dim() - 1:  # the dim was reduced away (kthvalue without keepdim)
            g, w = got.unsqueeze(dim), want.unsqueeze(dim)
        same = torch.equal(torch.take_along_dim(x, g, dim), torch.take_along_dim(x, w, dim))
    except (RuntimeError, IndexError):
        return actual
    if not same:
        return actual
    if position is None:
        return want
    return [want if i == position else a for i, a in enumerate(actual)]


def draws_dropout(op, sample):
    """Whether the sample asks for random dropout (scaled_dot_product_attention, multi_head_attention_forward)."""
    if op.name in DROPOUT_ARG:
        return sample.args[DROPOUT_ARG[op.name]] > 0 and sample.kwargs.get("training", True)
    return sample.kwargs.get("dropout_p", 0) > 0


def finite_difference_grads(op, sample, inputs, eps=1e-6):
    """The gradients of the summed floating outputs of op on sample with respect to each of inputs (float64
    tensors of the sample), by central differences of PyTorch's forward (see TORCH_GRAD_WRONG)."""
    def total(replace):
        def swap(x):
            if isinstance(x, torch.Tensor):
                return replace.get(id(x), x)
            if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
                return type(x)(swap(v) for v in x)
            if isinstance(x, dict):
                return {k: swap(v) for k, v in x.items()}
            return x
        with torch.no_grad():
            out = sample.output_process_fn_grad(op.op(swap(sample.input), *swap(sample.args), **swap(sample.kwargs)))
            return sum(float(o.sum()) for o in floats_of(out))
    grads = []
    for t in inputs:
        base = t.detach().clone()
        grad = torch.zeros_like(base)
        for i in range(base.numel()):
            up, down = base.clone(), base.clone()
            up.view(-1)[i] += eps
            down.view(-1)[i] -= eps
            grad.view(-1)[i] = (total({id(t): up}) - total({id(t): down})) / (2 * eps)
        grads.append(grad)
    return grads


def check_op_grad(op, rill_fn, sample, tols):
    """Compare the gradients of the summed floating outputs with respect to every input tensor."""
    if draws_dropout(op, sample):
        raise Unsupported("random dropout mask")
    try:
        out = sample.output_process_fn_grad(op.op(sample.input, *sample.args, **sample.kwargs))
        outs = floating_tensors(out)
        if not outs:
            return
        leaves = {}
        to_rill((sample.input, sample.args, sample.kwargs), leaves)
        pairs = [(t, r) for t, r in leaves.values() if t.requires_grad]
        if not pairs:
            return
        if op.name in TORCH_GRAD_WRONG:
            expected = finite_difference_grads(op, sample, [t for t, _ in pairs])
        else:
            expected = torch.autograd.grad(sum(o.sum() for o in outs), [t for t, _ in pairs], allow_unused=True)
    except (Unsupported, Mismatch):
        raise
    except Exception as e:
        raise Unsupported(f"torch raises {type(e).__name__}") from None
    args = to_rill((sample.input, sample.args, sample.kwargs), leaves)
    try:
        routs = floating_tensors(sample.output_process_fn_grad(rill_fn(args[0], *args[1], **args[2])))
        if len(routs) != len(outs):
            raise Mismatch(f"grad: {len(routs)} differentiable outputs vs torch {len(outs)}")
        total = routs[0].sum()
        for o in routs[1:]:
            total = total + o.sum()
        total.backward()
        grads = [to_torch(r.grad) if r.grad is not None else None for _, r in pairs]
    except Mismatch:
        raise
    except Exception as e:
        raise Mismatch(f"grad: {short(e)}") from None
    for i, (g, e) in enumerate(zip(grads, expected)):
        if e is None and g is None:
            continue
        e = torch.zeros_like(pairs[i][0]) if e is None else e
        g = torch.zeros_like(e) if g is None else g
        assert_same(g, e, tols, what=f"grad of input {i}")


def seeded(fn):
    """fn run as torch.testing's wrapper_set_seed runs an OpInfo's op: from seed 42, the generator's state
    restored after. rill's default generator draws PyTorch's numbers (the same MT19937), so an op that
    draws them in PyTorch's order gives PyTorch's result."""
    def run(*args, **kwargs):
        state = rill.get_rng_state()
        rill.manual_seed(42)
        try:
            return fn(*args, **kwargs)
        finally:
            rill.set_rng_state(state)
    return run


def _weights(t):
    """Fixed, uneven weights shaped like t (so no second-order term cancels by symmetry)."""
    return torch.cos(torch.arange(t.numel(), dtype=t.dtype) * 0.7 + 0.3).reshape(t.shape)


def _keeping_weights(weights):
    """For torch's side of _second_order: fixed weights for its first-order gradients, kept in weights for
    rill's side."""
    def create(first):
        weights.extend(None if g is None else _weights(g.detach()) for g in first)
        return weights
    return create


def _second_order(lib, outs, leaves, create):
    """The gradient of sum(w * grad) over the first-order gradients of the summed outputs."""
    total = outs[0].sum()
    for o in outs[1:]:
        total = total + o.sum()
    first = lib.autograd.grad(total, leaves, create_graph=True, allow_unused=True)
    used = [(g, w) for g, w in zip(first, create(first)) if g is not None and g.requires_grad]
    if not used:
        return None
    s = (used[0][0] * used[0][1]).sum()
    for g, w in used[1:]:
        s = s + (g * w).sum()
    return lib.autograd.grad(s, leaves, allow_unused=True)


def check_op_gradgrad(op, samples=GRADGRAD_SAMPLES):
    """None if rill's gradients of gradients (create_graph=True) agree with PyTorch's on the op's first float64
    samples, or the OpInfo has none to check (no autograd, no gradgrad, a random op); else "fails: <reason>"."""
    rill_fn = op_callable(op)[0]
    if (rill_fn is None or not op.supports_autograd or not op.supports_gradgrad or op.name in RANDOM_OPS
            or op_key(op) in GRADGRAD_UNDEFINED
            or op.name in TORCH_GRAD_WRONG or torch.float64 not in op.supported_backward_dtypes("cpu")):
        return None
    tols = tolerances(op)
    for sample in samples_of(op, torch.float64, True, samples):
        if draws_dropout(op, sample):
            continue
        try:
            out = sample.output_process_fn_grad(op.op(sample.input, *sample.args, **sample.kwargs))
            outs = floating_tensors(out)
            leaves = {}
            to_rill((sample.input, sample.args, sample.kwargs), leaves)
            pairs = [(t, r) for t, r in leaves.values() if t.requires_grad]
            if not outs or not pairs:
                continue
            weights = []
            expected = _second_order(torch, outs, [t for t, _ in pairs], _keeping_weights(weights))
            if expected is None:
                continue
        except Exception:
            continue
        GRADGRAD_CHECKED.add(op_key(op))
        args = to_rill((sample.input, sample.args, sample.kwargs), leaves)
        try:
            routs = floating_tensors(sample.output_process_fn_grad(rill_fn(args[0], *args[1], **args[2])))
            got = _second_order(rill, routs, [r for _, r in pairs],
                                lambda first: [None if w is None else rill.tensor(w.numpy()) for w in weights])
        except Exception as e:
            return f"fails: gradgrad: {short(e)}"
        if got is None:  # rill's first-order gradients are constant in the inputs: zeros
            got = [None] * len(pairs)
        for i, (g, e) in enumerate(zip(got, expected)):
            if e is None and g is None:
                continue
            e = torch.zeros_like(pairs[i][0]) if e is None else e
            g = torch.zeros_like(e) if g is None else to_torch(g)
            try:
                assert_same(g, e, tols, what=f"gradgrad of input {i}")
            except Mismatch as m:
                return f"fails: {m}"
    return None


def op_callable(op):
    """(rill's function for the OpInfo or None, its method name or None, its in-place method name or None)."""
    rill_fn = rill_function(op.name) if op.op is not None else None
    if rill_fn is not None and op.name in OPINFO_WRAPPERS:
        rill_fn = OPINFO_WRAPPERS[op.name]
    if rill_fn is not None and op.name in FACTORED_INPUT:
        rill_fn = (lambda fn: lambda a, b, **kwargs: fn(a @ b.mT, **kwargs))(rill_fn)
    if op_key(op) in VARIANT_LAMBDAS:
        rill_fn = VARIANT_LAMBDAS[op_key(op)]
    if rill_fn is not None and "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ()):
        rill_fn = seeded(rill_fn)
    if op.variant_test_name == "in_place" and getattr(op.inplace_variant, "__name__", "<lambda>") != "<lambda>":
        # its op is the in-place method on the input (normal.in_place: Tensor.normal_), not the function
        rill_fn = (lambda name: lambda x, *args, **kwargs: getattr(x.clone(), name)(*args, **kwargs))(
            op.inplace_variant.__name__)
    if rill_fn is not None and op.name in INPUT_SECOND:
        rill_fn = (lambda fn: lambda x, first, *args, **kwargs: fn(first, x, *args, **kwargs))(rill_fn)
    method = variant_name(op.method_variant, op.name.split(".")[-1]) if op.method_variant else None
    inplace = variant_name(op.inplace_variant, op.name.split(".")[-1] + "_") if op.inplace_variant else None
    return rill_fn, method, inplace


def check_op(op, samples_per_dtype=SAMPLES_PER_DTYPE, grad_samples=GRAD_SAMPLES):
    """None if rill agrees with PyTorch on the op's samples, else "missing" or "fails: <reason>"."""
    rill_fn, method, inplace = op_callable(op)
    if rill_fn is None and (method is None or getattr(rill.Tensor, method, None) is None):
        return "missing"
    tols = tolerances(op)
    random = op.name in RANDOM_OPS
    checked, skipped = 0, None
    try:
        for dtype in rill_dtypes(op.supported_dtypes("cpu")):
            where = str(dtype).split(".")[-1]
            for sample in samples_of(op, dtype, False, samples_per_dtype):
                try:
                    check_op_sample(op, rill_fn, method, inplace, sample, tols, random)
                    checked += 1
                except Unsupported as e:
                    skipped = e
        if (op.supports_autograd and rill_fn is not None and not random
                and torch.float64 in op.supported_backward_dtypes("cpu")):
            where = "float64"
            for sample in samples_of(op, torch.float64, True, grad_samples):
                try:
                    check_op_grad(op, rill_fn, sample, tols)
                except Unsupported:
                    continue
    except Mismatch as e:
        return f"fails: {where} {e}"
    if checked == 0:
        return f"fails: no sample checked ({skipped})"
    return None


def samples_of(op, dtype, requires_grad, limit):
    """The first limit sample inputs of op for dtype (fewer if the database's generator raises).

    Calls the OpInfo's generator directly: ``op.sample_inputs`` wraps it in an iterator that
    walks the call stack (``inspect.stack``) and reseeds on every sample, milliseconds each under
    pytest. The seed is set once instead."""
    torch.manual_seed(0)
    try:
        samples = iter(op.sample_inputs_func(op, "cpu", dtype, requires_grad))
    except Exception:
        return
    for _ in range(limit):
        try:
            sample = next(samples)
        except Exception:
            return
        yield sample


# --- modules --------------------------------------------------------------------------------------------------------

def rill_module_class(info):
    """rill's class for a ModuleInfo (``nn.Linear`` -> rill.nn.Linear), or None."""
    obj = rill
    for part in info.name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def check_module_input(info, cls, dtype, module_input, grads):
    ctor, fwd = module_input.constructor_input, module_input.forward_input
    random = info.name in RANDOM_MODULES
    try:
        torch.manual_seed(0)
        tm = info.module_cls(*ctor.args, **ctor.kwargs).to(dtype)
        tout = tm(*fwd.args, **fwd.kwargs)
        tstate = tm.state_dict()
    except Exception as e:
        raise Unsupported(f"torch raises {type(e).__name__}") from None
    leaves = {}
    cargs = to_rill((ctor.args, ctor.kwargs), leaves)
    fargs = to_rill((fwd.args, fwd.kwargs), leaves)
    state = {k: to_rill(v.detach(), {}) for k, v in tstate.items()}
    try:
        rm = cls(*cargs[0], **cargs[1]).to(RILL_DTYPES[dtype])
        rm.load_state_dict(state)
        rout = rm(*fargs[0], **fargs[1])
        actual = to_torch(rout)
    except Exception as e:
        raise Mismatch(f"forward: {short(e)}") from None
    assert_same(actual, tout, torch_comparison._DTYPE_PRECISIONS, values=not random)
    if not grads or random:
        return
    outs = floating_tensors(tout)
    inputs = [(t, r) for t, r in leaves.values() if t.requires_grad]
    params = [(n, p) for n, p in tm.named_parameters() if p.requires_grad]
    if not outs or not (inputs or params):
        return
    try:
        expected = torch.autograd.grad(sum(o.sum() for o in outs), [t for t, _ in inputs] + [p for _, p in params],
                                       allow_unused=True)
    except Exception as e:
        raise Unsupported(f"torch raises {type(e).__name__}") from None
    try:
        routs = floating_tensors(rout)
        if len(routs) != len(outs):
            raise Mismatch(f"grad: {len(routs)} differentiable outputs vs torch {len(outs)}")
        total = routs[0].sum()
        for o in routs[1:]:
            total = total + o.sum()
        total.backward()
        rparams = dict(rm.named_parameters())
        got = [r.grad for _, r in inputs] + [rparams[n].grad if n in rparams else None for n, _ in params]
        got = [to_torch(g) if g is not None else None for g in got]
    except Mismatch:
        raise
    except Exception as e:
        raise Mismatch(f"backward: {short(e)}") from None
    names = [f"input {i}" for i in range(len(inputs))] + [n for n, _ in params]
    for name, g, e in zip(names, got, expected):
        if e is None and g is None:
            continue
        e = torch.zeros_like(g) if e is None else e
        g = torch.zeros_like(e) if g is None else g
        assert_same(g, e, torch_comparison._DTYPE_PRECISIONS, what=f"grad of {name}")


def check_module(info, samples_per_dtype=SAMPLES_PER_DTYPE):
    """None if rill's module agrees with PyTorch's on the ModuleInfo's inputs, else "missing" or "fails: ..."."""
    cls = rill_module_class(info)
    if cls is None:
        return "missing"
    checked, skipped = 0, None
    for dtype in (torch.float32, torch.float64):
        if dtype not in info.dtypes:
            continue
        grads = dtype == torch.float64
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=grads, training=True)
            for module_input in inputs[:samples_per_dtype]:
                try:
                    check_module_input(info, cls, dtype, module_input, grads)
                    checked += 1
                except Unsupported as e:
                    skipped = e
        except Mismatch as e:
            return f"fails: {str(dtype).split('.')[-1]} {e}"
    if checked == 0:
        return f"fails: no input checked ({skipped})"
    return None


def check_module_gradgrad(info, samples=GRADGRAD_SAMPLES):
    """None if rill's gradients of gradients (create_graph=True) with respect to the inputs and parameters agree
    with PyTorch's on the ModuleInfo's first float64 inputs (or there is nothing to compare); else "fails: ..."."""
    cls = rill_module_class(info)
    if cls is None or info.name in RANDOM_MODULES or torch.float64 not in info.dtypes:
        return None
    try:
        module_inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=True,
                                                training=True)[:samples]
    except Exception:
        return None
    for module_input in module_inputs:
        ctor, fwd = module_input.constructor_input, module_input.forward_input
        weights = []
        try:
            torch.manual_seed(0)
            tm = info.module_cls(*ctor.args, **ctor.kwargs).to(torch.float64)
            leaves = {}
            to_rill((ctor.args, ctor.kwargs), leaves)
            to_rill((fwd.args, fwd.kwargs), leaves)
            inputs = [t for t, _ in leaves.values() if t.requires_grad]
            names = [n for n, p in tm.named_parameters() if p.requires_grad]
            tparams = dict(tm.named_parameters())
            outs = floating_tensors(tm(*fwd.args, **fwd.kwargs))
            if not outs or not (inputs or names):
                continue
            expected = _second_order(torch, outs, inputs + [tparams[n] for n in names], _keeping_weights(weights))
            if expected is None:
                continue
        except Exception:
            continue
        GRADGRAD_CHECKED.add(info.name)
        try:
            cargs = to_rill((ctor.args, ctor.kwargs), leaves)
            fargs = to_rill((fwd.args, fwd.kwargs), leaves)
            rm = cls(*cargs[0], **cargs[1]).to(rill.float64)
            rm.load_state_dict({k: to_rill(v.detach(), {}) for k, v in tm.state_dict().items()})
            rparams = dict(rm.named_parameters())
            routs = floating_tensors(rm(*fargs[0], **fargs[1]))
            rleaves = [r for t, r in leaves.values() if t.requires_grad] + [rparams[n] for n in names]
            got = _second_order(rill, routs, rleaves,
                                lambda first: [None if w is None else rill.tensor(w.numpy()) for w in weights])
        except Exception as e:
            return f"fails: gradgrad: {short(e)}"
        got = [None] * len(expected) if got is None else got
        for name, g, e in zip([f"input {i}" for i in range(len(inputs))] + names, got, expected):
            if e is None and g is None:
                continue
            g = to_torch(g) if g is not None else None
            e = torch.zeros_like(g) if e is None else e
            g = torch.zeros_like(e) if g is None else g
            try:
                assert_same(g, e, torch_comparison._DTYPE_PRECISIONS, what=f"gradgrad of {name}")
            except Mismatch as m:
                return f"fails: {m}"
    return None


# --- the expectations file ------------------------------------------------------------------------------------------

def load_databases():
    """(in-scope OpInfos by key, ModuleInfos by name), in the databases' order."""
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.common_modules import module_db
    ops = {op_key(op): op for op in op_db if in_scope(op)}
    modules = {info.name: info for info in module_db}
    return ops, modules


def read_expected():
    """{"ops": {key: reason}, "modules": {name: reason}, "gradgrad": {key: reason}} from expected.json."""
    expected = json.loads(EXPECTED_PATH.read_text())
    expected.setdefault("gradgrad", {})
    return expected


def write_expected(ops, modules, gradgrad):
    """Write expected.json: the not-passing entries of each kind, sorted, one per line."""
    lines = ["{"]
    kinds = (("ops", ops), ("modules", modules), ("gradgrad", gradgrad))
    for i, (kind, entries) in enumerate(kinds):
        lines.append(f' "{kind}": {{')
        items = sorted(entries.items())
        for j, (key, reason) in enumerate(items):
            comma = "," if j < len(items) - 1 else ""
            lines.append(f"  {json.dumps(key)}: {json.dumps(reason)}{comma}")
        lines.append(" }," if i < len(kinds) - 1 else " }")
    lines.append("}")
    EXPECTED_PATH.write_text("\n".join(lines) + "\n")
