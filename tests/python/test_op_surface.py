"""How much of PyTorch's Python surface rill has: torch.nn modules, torch.nn.functional, top-level functions
and Tensor methods, each as "have / PyTorch has", counting only what applies to a CPU framework with rill's
dtypes (EXCLUDED says what is left out and why). Run with -s to read the counts; the test fails when a
namespace falls below the floor recorded in FLOORS (raise a floor when the surface grows)."""
import inspect
import re

import pytest
import torch

import rill

# name patterns that do not apply to a CPU framework without complex, sparse or quantized tensors
EXCLUDED = {
    "CUDA, cuDNN, MIOpen, oneDNN/MKL-DNN and FBGEMM entry points": r"^(cuda|cudnn|miopen|mkldnn|fbgemm|xpu|mps|"
                                                                   r"is_vulkan|_)",
    "quantization": r"(quantiz|^q_|^int_repr$|fake_quant|^choose_qparams|^Quant|^DeQuant|observer|^qscheme$)",
    "sparse tensors": r"(sparse|^smm$|^spmm$|^hspmm$|^dsmm$|^hsmm$|^saddmm$|^sspaddmm$|indices_copy$|"
                      r"^values_copy$|^(c?col|crow|row)_indices$|^coalesce$|^is_coalesced$|^dense_dim$|^indices$|"
                      r"^values$|^to_dense$)",
    "other devices and memory kinds": r"^(ipu|mtia|is_(ipu|maia|mps|mtia|xla|xpu|meta|mkldnn|pinned|nested)|"
                                      r"to_mkldnn|record_stream|pin_memory|to_padded_tensor)$",
    "CUDA-only fused kernels": r"^(grouped_mm|scaled_grouped_mm|scaled_mm)$",
    "complex tensors": r"(complex|^polar$|^imag$|^real$|^conj|^is_conj$|^is_neg$|^resolve_|^c(double|float|half)$|"
                       r"^chalf$)",
    "TorchScript, FX, export and compiler internals": r"(^import_ir|^parse_ir$|^parse_schema$|type_comment|"
                                                      r"^unify_type_list$|^fork$|^wait$|^sym_|^while_loop$|^cond$|"
                                                      r"^vmap$|^compiled_with|^classproperty$|^profiler_|"
                                                      r"^get_device_module$|^get_file_path$|^prepare_multiprocessing|"
                                                      r"^thread_safe_generator$|^autocast_|autocast|^Script)",
    "internals of other ops (batch-norm statistics kernels, *_copy views)": r"(^batch_norm_(backward|elemt|gather|"
                                                                             r"stats|update)|_copy$)",
    "multi-device modules": r"^(DataParallel|SyncBatchNorm)$",
    "names PyTorch keeps but removed (they raise there too) or legacy autograd fields": r"^(symeig|eig|lstsq|solve|"
                                                                                      r"matrix_rank|NLLLoss2d|"
                                                                                      r"Container|volatile|"
                                                                                      r"reinforce|output_nr)$",
}
FLOORS = {"nn modules": 0.85, "nn.functional": 0.70, "top-level functions": 0.70, "Tensor methods": 0.70}


def _excluded(name):
    return any(re.search(p, name) for p in EXCLUDED.values())


def _public(ns, keep):
    return {n for n in dir(ns) if not n.startswith("_") and not _excluded(n) and keep(getattr(ns, n))}


def surfaces():
    def is_module_class(v):
        return inspect.isclass(v) and issubclass(v, torch.nn.Module)

    def is_function(v):
        return callable(v) and not inspect.isclass(v) and not inspect.ismodule(v)

    return {
        "nn modules": (_public(torch.nn, is_module_class), rill.nn),
        "nn.functional": (_public(torch.nn.functional, is_function) - {"Optional", "boolean_dispatch",
                                                                       "handle_torch_function", "has_torch_function",
                                                                       "has_torch_function_unary",
                                                                       "has_torch_function_variadic",
                                                                       "assert_int_or_pair"}, rill.nn.functional),
        "top-level functions": (_public(torch, is_function), rill),
        "Tensor methods": ({n for n in dir(torch.Tensor) if not n.startswith("_") and not _excluded(n)},
                           rill.Tensor),
    }


@pytest.mark.parametrize("kind", list(FLOORS))
def test_surface_counts(kind):
    names, ours = surfaces()[kind]
    have = sorted(n for n in names if hasattr(ours, n))
    missing = sorted(set(names) - set(have))
    share = len(have) / len(names)
    print(f"\n{kind}: {len(have)} / {len(names)} ({share:.0%}); missing: {', '.join(missing)}")
    assert share >= FLOORS[kind], f"{kind}: {len(have)} of {len(names)} ({share:.1%}) is below {FLOORS[kind]:.0%}"
