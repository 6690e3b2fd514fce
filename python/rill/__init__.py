"""rill: a deep-learning framework with a C++ core and a PyTorch-style API.

``import rill as flow`` (or ``import rill as torch`` for most PyTorch CPU scripts).
"""
from rill import _C
from rill._C import (  # noqa: F401
    Tensor, dtype, device,
    bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    promote_types, result_type,
    from_numpy, from_dlpack,
    zeros, ones, empty, full, arange, rand, randn, randint,
    manual_seed, seed, initial_seed,
    neg, abs, relu, exp, log, sqrt, sigmoid, tanh,
    add, sub, subtract, mul, multiply, div, divide, true_divide, pow, maximum, minimum,
    eq, ne, lt, le, gt, ge, not_equal, less, less_equal, greater, greater_equal,
    where, sum, mean, amax, amin, argmax, argmin, max, min,
    matmul, mm, bmm,
    cat, concat, concatenate, stack, split, chunk, unflatten, movedim, moveaxis, tile, flip, fliplr, flipud, roll,
    tril, triu, diag, as_strided,
    index_select, gather, scatter, scatter_add, index_add, index_put, masked_fill, masked_select, take_along_dim,
    nonzero, argwhere, sort, argsort, topk, kthvalue, unique,
    # the op library (python/src/math_ops.cpp; sign, sin, ... come from the unary lists)
    sign, log1p, expm1, rsqrt, sin, cos, erf, reciprocal, floor, ceil, trunc, fix, round, square,
    clamp, clip, clamp_min, clamp_max, floor_divide, remainder, fmod, atan2, arctan2, lerp, addcmul, addcdiv,
    bitwise_and, bitwise_or, bitwise_xor, bitwise_not, logical_and, logical_or, logical_xor, logical_not,
    prod, var, std, logsumexp, any, all, norm, cumsum, cumprod,
    memory_stats, empty_cache, reset_peak_memory_stats,
    set_num_threads, get_num_threads, synchronize, set_env_override, env_knobs,
)
from rill._C import is_grad_enabled  # noqa: F401

# Every op bound from its signature (Note [Bindings from signatures] in python/src/schema_bindings.cpp).
globals().update({name: getattr(_C, name) for name in _C._schema_functions})
from rill import asyncs  # noqa: F401
from rill import odb  # noqa: F401
from rill._vm_trace import vm_trace  # noqa: F401
from rill._tensor import Size  # noqa: F401  (also installs Python-side Tensor methods)
from rill._tensor import memory_format, contiguous_format, preserve_format, channels_last, channels_last_3d  # noqa: F401,E501
from rill import autograd  # noqa: F401
from rill import linalg  # noqa: F401
from rill import return_types  # noqa: F401  (the named tuples of max(x, dim), sort, topk, ...)
from rill import experimental  # noqa: F401  (delay_tick)
from rill import sbp  # noqa: F401  (global tensors: rill.sbp.split(0), broadcast, partial_sum)
from rill.autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: F401
from rill import nn  # noqa: F401  (rill.nn.functional)
from rill._creation import (  # noqa: F401
    tensor, as_tensor, zeros_like, ones_like, empty_like, full_like, rand_like, randn_like,
    is_tensor, numel, reshape, permute, flatten, clone,
    get_default_dtype, set_default_dtype, set_default_tensor_type, is_floating_point, negative, absolute,
)
from rill import _tensor_extras  # noqa: F401  (pickling, deepcopy, uniform_/normal_)
from rill._global import placement  # noqa: F401,E402  (global tensors: Tensor.to_global, Module.to_global)
from rill import _tensor_views  # noqa: F401,E402  (squeeze_, t_, transpose_, ...)
from rill import _compositions  # noqa: E402  (ops composed of rill's ops, where the op library lacks them)

globals().update({name: getattr(_compositions, name) for name in _compositions.__all__ if name not in globals()})
globals().update(slice=_compositions.shape._slice, _chunk_cat=_compositions.shape._chunk_cat)  # torch.slice, _chunk_cat
from rill._generator import Generator, default_generator  # noqa: F401
from rill._rng_api import (  # noqa: F401,E402  (MT19937, PyTorch's numbers: replace _C's Philox forms)
    rand, randn, randint, rand_like, randn_like, manual_seed, seed, initial_seed, get_rng_state, set_rng_state,
)
from rill import _random  # noqa: E402

_random.install(_random.rill)
from rill._strict import set_strict_dtype, is_strict_dtype, strict_dtype  # noqa: F401
from rill.serialization import save, load  # noqa: F401
from rill.safetensors import load_file, save_file  # noqa: F401  (safetensors files; the package is imported on use)
from rill import nn, optim, utils  # noqa: F401
from rill.nn.functional import softmax, log_softmax  # noqa: F401  (torch.softmax, torch.log_softmax)
from rill import backends, cuda, fft, onnx  # noqa: F401
from rill import amp, cpu  # noqa: F401
from rill.amp import autocast  # noqa: F401
from rill.amp.autocast_mode import (  # noqa: F401
    get_autocast_cpu_dtype, get_autocast_dtype, is_autocast_available, is_autocast_cpu_enabled, is_autocast_enabled,
    set_autocast_dtype, set_autocast_enabled,
)
from rill import masked, signal, special  # noqa: F401  (what CPU scripts check before choosing a device)
from rill._finfo import finfo, iinfo  # noqa: F401
from rill import distributions  # noqa: F401
from rill._compile import compile  # noqa: F401,A001  (torch.compile)
from rill import jit  # noqa: F401
from rill._lowrank import pca_lowrank, svd_lowrank  # noqa: F401
from rill._legacy import (  # noqa: F401
    FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor, ShortTensor, IntTensor,
    LongTensor, BoolTensor,
)

# dtype aliases, as in PyTorch
half = float16
float = float32
double = float64
short = int16
int = int32
long = int64

__version__ = "0.1.0"
from rill import _torch_level  # noqa: E402

_torch_level.install()  # torch.* spellings beside rill.nn.functional and the Tensor methods
from rill import _aten_forms  # noqa: E402

_aten_forms.install()  # torch.* forms with aten's argument orders (torch.batch_norm, torch.kl_div, ...)

import atexit as _atexit

_atexit.register(_C._shutdown)  # exit waits for queued work instead of dropping it
