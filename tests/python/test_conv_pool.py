"""Convolution and pooling against PyTorch: every forward op of rill.nn.functional and
every backward op of rill._C (compared with torch.autograd's gradients), over stride,
padding (ints, pairs, 'same', 'valid'), dilation, groups (depthwise too), unbatched
inputs, ceil_mode, count_include_pad, divisor_override, non-contiguous inputs, float32
and float64; the errors; and a fork during and after convolutions."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import rill
import rill.nn.functional as F
from conftest import assert_close, to_numpy

C = rill._C
DTYPES = ["float32", "float64"]
# torch's note that its 'same' padding for even kernels copies the input: not about rill.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


def close(actual, expected, dtype):
    """assert_close with room for sums of many products in another order (scaled to the result)."""
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    if dtype == "float32":
        assert_close(actual, expected, rtol=1e-4, atol=1e-5 * scale)
    else:
        assert_close(actual, expected, rtol=1e-10, atol=1e-12 * scale)


def tensors(shape, dtype, seed, view=None):
    """(rill, torch leaf with requires_grad) holding the same uniform [-1, 1) data, viewed by view."""
    arr = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    r = rill.tensor(arr).to(getattr(rill, dtype))
    t = torch.tensor(arr).to(getattr(torch, dtype))
    if view is not None:
        r, t = view(r), view(t)
        assert not r.is_contiguous()
    return r, t.detach().requires_grad_(True)


def grad_pair(shape, dtype, seed):
    arr = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    return rill.tensor(arr).to(getattr(rill, dtype)), torch.tensor(arr).to(getattr(torch, dtype))


# --- conv2d -----------------------------------------------------------------------------------

# name: (input shape, weight shape, bias, kwargs)
CONV2D = {
    "basic": ((2, 3, 8, 8), (4, 3, 3, 3), True, {}),
    "stride2_pad1": ((2, 3, 9, 9), (5, 3, 3, 3), True, dict(stride=2, padding=1)),
    "pairs": ((2, 3, 9, 7), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 2))),
    "dilation": ((2, 3, 10, 10), (4, 3, 3, 3), True, dict(dilation=2, padding=1)),
    "dilation_pair": ((1, 2, 11, 9), (3, 2, 3, 2), False, dict(dilation=(2, 3), stride=(1, 2))),
    "groups": ((2, 4, 9, 9), (6, 2, 3, 3), True, dict(groups=2, padding=1)),
    "depthwise": ((2, 4, 8, 8), (8, 1, 3, 3), True, dict(groups=4, padding=1)),
    "depthwise16": ((3, 16, 12, 12), (16, 1, 3, 3), True, dict(groups=16, padding=1, stride=2)),
    "same_odd": ((2, 3, 8, 8), (4, 3, 3, 3), True, dict(padding="same")),
    "same_even_dilated": ((2, 3, 9, 10), (4, 3, 4, 2), True, dict(padding="same", dilation=(2, 3))),
    "valid": ((2, 3, 8, 8), (4, 3, 3, 3), True, dict(padding="valid")),
    "no_bias": ((2, 3, 8, 8), (4, 3, 3, 3), False, dict(padding=1)),
    "one_by_one": ((2, 8, 5, 5), (16, 8, 1, 1), True, {}),
    "unbatched": ((3, 8, 8), (4, 3, 3, 3), True, dict(padding=1)),
    "wide": ((4, 32, 12, 12), (32, 32, 3, 3), True, dict(padding=1)),
    "odd_batch": ((5, 16, 16, 16), (24, 16, 3, 3), True, dict(padding=1)),
    "bench_shape": ((32, 3, 32, 32), (16, 3, 3, 3), True, dict(padding=1)),
}


def conv_args(kwargs):
    return (kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("dilation", 1), kwargs.get("groups", 1))


def run_conv2d(name, dtype, x_view=None, w_view=None, x_base=None, w_base=None):
    xs, ws, with_bias, kwargs = CONV2D[name]
    rx, tx = tensors(x_base or xs, dtype, 1, x_view)
    rw, tw = tensors(w_base or ws, dtype, 2, w_view)
    rb, tb = tensors((ws[0],), dtype, 3) if with_bias else (None, None)
    ty = TF.conv2d(tx, tw, tb, **kwargs)
    ry = F.conv2d(rx, rw, rb, **kwargs)
    close(ry, ty.detach(), dtype)
    rg, tg = grad_pair(tuple(ty.shape), dtype, 4)
    ty.backward(tg)
    stride, padding, dilation, groups = conv_args(kwargs)
    close(C._conv2d_backward_input(rg, rw, tuple(tx.shape), stride, padding, dilation, groups), tx.grad, dtype)
    close(C._conv2d_backward_weight(rg, rx, tuple(tw.shape), stride, padding, dilation, groups), tw.grad, dtype)
    if with_bias:
        close(C._conv_backward_bias(rg), tb.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CONV2D))
def test_conv2d(name, dtype):
    run_conv2d(name, dtype)


@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_threads(threads):
    old = rill.get_num_threads()
    rill.set_num_threads(threads)
    try:
        for name in ("wide", "odd_batch", "bench_shape", "depthwise16"):
            run_conv2d(name, "float32")
    finally:
        rill.set_num_threads(old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d_non_contiguous(dtype):
    # input as an NHWC buffer permuted to NCHW, weight as a strided slice
    run_conv2d("basic", dtype, x_view=lambda x: x.permute(0, 3, 1, 2), x_base=(2, 8, 8, 3),
               w_view=lambda w: w[:, :, ::2, ::2], w_base=(4, 3, 6, 6))


def test_conv2d_same_padding_is_asymmetric_for_even_kernels():
    rx, tx = tensors((1, 1, 6, 6), "float64", 1)
    rw, tw = tensors((1, 1, 2, 4), "float64", 2)
    ry = F.conv2d(rx, rw, padding="same")
    assert tuple(ry.shape) == (1, 1, 6, 6)
    close(ry, TF.conv2d(tx, tw, padding="same").detach(), "float64")


# --- conv1d -----------------------------------------------------------------------------------

CONV1D = {
    "basic": ((2, 3, 10), (4, 3, 3), True, {}),
    "stride_pad": ((2, 3, 11), (4, 3, 3), True, dict(stride=2, padding=1)),
    "same_even_dilated": ((2, 3, 12), (4, 3, 4), True, dict(padding="same", dilation=3)),
    "groups": ((2, 4, 10), (6, 2, 3), False, dict(groups=2, dilation=2)),
    "unbatched": ((3, 10), (4, 3, 3), True, dict(padding=2)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CONV1D))
def test_conv1d(name, dtype):
    xs, ws, with_bias, kwargs = CONV1D[name]
    rx, tx = tensors(xs, dtype, 1)
    rw, tw = tensors(ws, dtype, 2)
    rb, tb = tensors((ws[0],), dtype, 3) if with_bias else (None, None)
    ty = TF.conv1d(tx, tw, tb, **kwargs)
    close(F.conv1d(rx, rw, rb, **kwargs), ty.detach(), dtype)
    rg, tg = grad_pair(tuple(ty.shape), dtype, 4)
    ty.backward(tg)
    stride, padding, dilation, groups = conv_args(kwargs)
    close(C._conv1d_backward_input(rg, rw, tuple(tx.shape), stride, padding, dilation, groups), tx.grad, dtype)
    close(C._conv1d_backward_weight(rg, rx, tuple(tw.shape), stride, padding, dilation, groups), tw.grad, dtype)
    if with_bias:
        close(C._conv_backward_bias(rg, 1), tb.grad, dtype)


# --- conv_transpose2d -------------------------------------------------------------------------

# name: (input shape, weight shape (C_in, C_out / groups, kH, kW), bias, kwargs)
CONV_T = {
    "basic": ((2, 4, 5, 5), (4, 3, 3, 3), True, {}),
    "stride_pad_outpad": ((2, 4, 5, 6), (4, 3, 3, 3), True, dict(stride=2, padding=1, output_padding=1)),
    "pairs": ((2, 4, 5, 6), (4, 2, 3, 2), True, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    "groups": ((2, 4, 5, 5), (4, 3, 3, 3), True, dict(groups=2, stride=2)),
    "dilation": ((2, 3, 5, 5), (3, 2, 3, 3), False, dict(dilation=2, padding=1)),
    "outpad_below_dilation": ((2, 3, 5, 5), (3, 2, 3, 3), True, dict(dilation=2, output_padding=1)),
    "outpad_below_dilation_padded": ((2, 3, 5, 6), (3, 2, 3, 3), True,
                                     dict(dilation=(2, 3), padding=(2, 1), output_padding=(1, 2))),
    "unbatched": ((4, 5, 5), (4, 3, 3, 3), True, dict(stride=2)),
    "wide": ((2, 32, 8, 8), (32, 16, 3, 3), True, dict(stride=2, padding=1, output_padding=1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CONV_T))
def test_conv_transpose2d(name, dtype):
    xs, ws, with_bias, kwargs = CONV_T[name]
    rx, tx = tensors(xs, dtype, 1)
    rw, tw = tensors(ws, dtype, 2)
    out_channels = ws[1] * kwargs.get("groups", 1)
    rb, tb = tensors((out_channels,), dtype, 3) if with_bias else (None, None)
    ty = TF.conv_transpose2d(tx, tw, tb, **kwargs)
    close(F.conv_transpose2d(rx, rw, rb, **kwargs), ty.detach(), dtype)
    rg, tg = grad_pair(tuple(ty.shape), dtype, 4)
    ty.backward(tg)
    stride, padding, dilation, groups = conv_args(kwargs)
    close(C._conv_transpose2d_backward_input(rg, rw, tuple(tx.shape), stride, padding, dilation, groups), tx.grad,
          dtype)
    close(C._conv_transpose2d_backward_weight(rg, rx, tuple(tw.shape), stride, padding, dilation, groups), tw.grad,
          dtype)
    if with_bias:
        close(C._conv_backward_bias(rg), tb.grad, dtype)


# --- pooling ----------------------------------------------------------------------------------

# name: (input shape, kwargs)
MAX_POOL = {
    "k2": ((2, 3, 8, 8), dict(kernel_size=2)),
    "k3_s2_p1": ((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1)),
    "ceil": ((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "ceil_odd": ((1, 2, 7, 7), dict(kernel_size=2, ceil_mode=True)),
    "pairs": ((2, 3, 9, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    "dilation": ((2, 3, 10, 10), dict(kernel_size=3, stride=1, padding=1, dilation=2)),
    "dilation_ceil": ((1, 2, 11, 10), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=(2, 3), ceil_mode=True)),
    "unbatched": ((3, 8, 8), dict(kernel_size=2)),
}


def check_max_pool(rx, tx, kwargs, dtype):
    tv, ti = TF.max_pool2d(tx, return_indices=True, **kwargs)
    rv, ri = F.max_pool2d(rx, return_indices=True, **kwargs)
    close(rv, tv.detach(), dtype)
    assert_close(ri, ti)
    close(F.max_pool2d(rx, **kwargs), tv.detach(), dtype)
    rg, tg = grad_pair(tuple(tv.shape), dtype, 4)
    tv.backward(tg)
    close(C._max_pool2d_backward(rg, ri, tuple(tx.shape)), tx.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MAX_POOL))
def test_max_pool2d(name, dtype):
    shape, kwargs = MAX_POOL[name]
    rx, tx = tensors(shape, dtype, 1)
    check_max_pool(rx, tx, kwargs, dtype)


def test_max_pool2d_non_contiguous_and_nan():
    rx, tx = tensors((2, 8, 8, 3), "float32", 1, view=lambda x: x.permute(0, 3, 1, 2))
    check_max_pool(rx, tx, dict(kernel_size=3, stride=2, padding=1), "float32")
    arr = np.random.default_rng(0).uniform(-1, 1, size=(1, 1, 4, 4)).astype(np.float32)
    arr[0, 0, 1, 2] = np.nan
    rv, ri = F.max_pool2d(rill.tensor(arr), 2, return_indices=True)
    tv, ti = TF.max_pool2d(torch.tensor(arr), 2, return_indices=True)
    assert_close(rv, tv)
    assert_close(ri, ti)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("shape", [(2, 16, 8, 8), (32, 16, 16, 16)])  # oneDNN in one piece; one per thread
def test_max_pool2d_nan_and_negative_infinity(shape, dtype):
    # Note [Pooling on oneDNN]: oneDNN's max ignores NaN and starts from the lowest finite value; PyTorch's
    # maximum of a window holding NaN is NaN, and of a window of -inf is -inf.
    arr = np.random.default_rng(0).uniform(-1, 1, size=shape)
    arr[0, 0, 1, 2] = np.nan
    arr[-1, -1, 4:6, 4:6] = -np.inf
    arr[0, 1, 0, 0] = np.inf
    arr[-1, 0, 3:5, 6:] = np.nan
    for kwargs in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)]:
        rx = rill.tensor(arr).to(getattr(rill, dtype))
        tx = torch.tensor(arr).to(getattr(torch, dtype))
        assert_close(F.max_pool2d(rx, **kwargs), TF.max_pool2d(tx, **kwargs))


def test_max_pool2d_workspace_outlives_a_thread_count_change():
    # The workspace saved for backward is read by the path that wrote it, and its planes are laid out the
    # same whichever pieces the threads cut (Note [Pooling on oneDNN]).
    arr = np.random.default_rng(3).standard_normal((32, 16, 16, 16)).astype(np.float32)
    tx = torch.tensor(arr, requires_grad=True)
    TF.max_pool2d(tx, 3, 2, 1).sum().backward()
    threads = rill.get_num_threads()
    try:
        for forward, backward in [(2, 1), (1, 2), (3, 2)]:
            rill.set_num_threads(forward)
            rx = rill.tensor(arr).requires_grad_()
            y = F.max_pool2d(rx, 3, 2, 1)
            rill.set_num_threads(backward)
            y.sum().backward()
            assert_close(rx.grad, tx.grad)
    finally:
        rill.set_num_threads(threads)


AVG_POOL = {
    "k2": ((2, 3, 8, 8), dict(kernel_size=2)),
    "k3_s2_p1": ((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1)),
    "exclude_pad": ((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    "ceil": ((2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "ceil_exclude_pad": ((2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                            count_include_pad=False)),
    "pairs_ceil": ((1, 2, 9, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=True)),
    "divisor": ((2, 3, 8, 8), dict(kernel_size=2, divisor_override=3)),
    "divisor_ceil": ((1, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                        count_include_pad=False, divisor_override=5)),
    "unbatched": ((3, 8, 8), dict(kernel_size=2, stride=1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(AVG_POOL))
def test_avg_pool2d(name, dtype):
    shape, kwargs = AVG_POOL[name]
    rx, tx = tensors(shape, dtype, 1)
    ty = TF.avg_pool2d(tx, **kwargs)
    close(F.avg_pool2d(rx, **kwargs), ty.detach(), dtype)
    rg, tg = grad_pair(tuple(ty.shape), dtype, 4)
    ty.backward(tg)
    k = kwargs
    got = C._avg_pool2d_backward(rg, tuple(tx.shape), k["kernel_size"], k.get("stride"), k.get("padding", 0),
                                 k.get("ceil_mode", False), k.get("count_include_pad", True),
                                 k.get("divisor_override"))
    close(got, tx.grad, dtype)


def test_avg_pool2d_non_contiguous():
    rx, tx = tensors((2, 9, 9, 3), "float64", 1, view=lambda x: x.permute(0, 3, 1, 2))
    close(F.avg_pool2d(rx, 3, 2, 1), TF.avg_pool2d(tx, 3, 2, 1).detach(), "float64")


ADAPTIVE = {
    "global": ((2, 3, 7, 7), (1, 1)),
    "uneven": ((2, 3, 7, 7), (3, 3)),
    "rect": ((2, 3, 8, 5), (4, 2)),
    "int": ((2, 3, 10, 10), 5),
    "none": ((2, 3, 9, 6), (None, 2)),
    "upsample": ((1, 2, 5, 7), (8, 9)),
    "unbatched": ((3, 7, 6), (2, 4)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ADAPTIVE))
def test_adaptive_avg_pool2d(name, dtype):
    shape, out = ADAPTIVE[name]
    rx, tx = tensors(shape, dtype, 1)
    ty = TF.adaptive_avg_pool2d(tx, out)
    close(F.adaptive_avg_pool2d(rx, out), ty.detach(), dtype)
    rg, tg = grad_pair(tuple(ty.shape), dtype, 4)
    ty.backward(tg)
    close(C._adaptive_avg_pool2d_backward(rg, tuple(tx.shape)), tx.grad, dtype)


def test_adaptive_avg_pool2d_non_contiguous():
    rx, tx = tensors((2, 7, 7, 3), "float32", 1, view=lambda x: x.permute(0, 3, 1, 2))
    close(F.adaptive_avg_pool2d(rx, 3), TF.adaptive_avg_pool2d(tx, 3).detach(), "float32")


# --- errors -----------------------------------------------------------------------------------


def x4(*shape, dtype="float32"):
    return tensors(shape or (2, 4, 8, 8), dtype, 0)


# name: (op name the message must start with, call(lib, F, x, w)) for inputs x (2, 4, 8, 8)
ERRORS = {
    "conv_weight_dims": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3))),
    "conv_channels": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 3, 3, 3))),
    "conv_groups": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(3, 2, 3, 3), groups=2)),
    "conv_kernel_too_big": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 9, 9))),
    "conv_bad_padding_string": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3), padding="full")),
    "conv_same_strided": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3), padding="same", stride=2)),
    "conv_negative_padding": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3), padding=-1)),
    "conv_2d_input": ("conv2d", lambda lib, f, x: f.conv2d(lib.ones(4, 8), lib.ones(4, 4, 3, 3))),
    "conv_bias": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3), lib.ones(5))),
    "conv_dtypes": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3, dtype=lib.float64))),
    "conv_stride_len": ("conv2d", lambda lib, f, x: f.conv2d(x, lib.ones(4, 4, 3, 3), stride=(1, 1, 1))),
    "conv1d_input": ("conv1d", lambda lib, f, x: f.conv1d(x, lib.ones(4, 4, 3))),
    "convt_output_padding": ("conv_transpose2d",
                             lambda lib, f, x: f.conv_transpose2d(x, lib.ones(4, 4, 3, 3), output_padding=1)),
    "convt_channels": ("conv_transpose2d", lambda lib, f, x: f.conv_transpose2d(x, lib.ones(3, 4, 3, 3))),
    "max_pool_padding": ("max_pool2d", lambda lib, f, x: f.max_pool2d(x, 2, padding=2)),
    "max_pool_too_small": ("max_pool2d", lambda lib, f, x: f.max_pool2d(lib.ones(1, 1, 2, 2), 3)),
    "max_pool_2d_input": ("max_pool2d", lambda lib, f, x: f.max_pool2d(lib.ones(8, 8), 2)),
    "avg_pool_divisor_zero": ("avg_pool2d", lambda lib, f, x: f.avg_pool2d(x, 2, divisor_override=0)),
    "avg_pool_padding": ("avg_pool2d", lambda lib, f, x: f.avg_pool2d(x, 3, padding=2)),
    "adaptive_2d_input": ("adaptive_avg_pool2d", lambda lib, f, x: f.adaptive_avg_pool2d(lib.ones(4, 8), 2)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    op, call = ERRORS[name]
    rx, tx = x4()
    with pytest.raises(Exception) as t_err:
        call(torch, TF, tx.detach())
    with pytest.raises(Exception) as r_err:
        call(rill, F, rx)
    assert type(r_err.value) is type(t_err.value), f"rill {r_err.value!r} vs torch {t_err.value!r}"
    assert f"[{op}]" in str(r_err.value), str(r_err.value)


def test_bool_convolution_and_integer_adaptive_pooling_raise_type_error():
    x = rill.ones(1, 2, 5, 5, dtype=rill.bool)
    with pytest.raises(TypeError, match=r"\[convolution\].*bool"):
        F.conv2d(x, rill.ones(2, 2, 3, 3, dtype=rill.bool))
    with pytest.raises(TypeError, match=r"\[adaptive_avg_pool2d\]"):
        F.adaptive_avg_pool2d(x.long(), 2)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "int32"])
def test_integer_pooling_matches_torch(dtype):
    """Integer max and average pooling (PyTorch's CPU kernels take them; rill composes them): average pooling
    truncates the window sum divided by the divisor."""
    a = np.random.default_rng(3).integers(0, 50, size=(2, 3, 7, 6))
    x, t = rill.tensor(a).to(getattr(rill, dtype)), torch.tensor(a).to(getattr(torch, dtype))
    for args in [(2,), (3, 2, 1), ((3, 2), (2, 1), (1, 0), 1, True)]:
        r, e = F.max_pool2d(x, *args, return_indices=True), torch.nn.functional.max_pool2d(t, *args,
                                                                                           return_indices=True)
        assert r[0].tolist() == e[0].tolist() and r[1].tolist() == e[1].tolist()
    if dtype != "int64":
        return  # PyTorch's average pooling takes int64 only
    for args in [(2,), (3, 2, 1), (3, 2, 1, True, False), (2, 1, 0, False, True, 3)]:
        assert F.avg_pool2d(x, *args).tolist() == torch.nn.functional.avg_pool2d(t, *args).tolist()


def test_backward_shape_errors():
    rx, _ = x4()
    gy = rill.ones(2, 4, 6, 6)
    with pytest.raises(RuntimeError, match=r"\[conv2d_backward_input\] expected grad_output of size"):
        C._conv2d_backward_input(gy, rill.ones(4, 4, 3, 3), (2, 4, 9, 9), 1, 0, 1, 1)
    with pytest.raises(RuntimeError, match=r"\[conv2d_backward_weight\] expected grad_output of size"):
        C._conv2d_backward_weight(rill.ones(2, 4, 5, 5), rx, (4, 4, 3, 3), 1, 0, 1, 1)
    with pytest.raises(RuntimeError, match=r"\[avg_pool2d_backward\] expected grad_output of size"):
        C._avg_pool2d_backward(gy, (2, 4, 8, 8), 2, None, 0, False, True, None)
    _, idx = F.max_pool2d(rx, 2, return_indices=True)
    with pytest.raises(RuntimeError, match=r"\[max_pool2d_backward\]"):
        C._max_pool2d_backward(gy, idx, (2, 4, 8, 8))


# --- fork -------------------------------------------------------------------------------------

FORK_SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    import rill
    import rill.nn.functional as F
    rill.set_num_threads(2)
    x = rill.randn(32, 3, 32, 32)
    w = rill.randn(16, 3, 3, 3)
    gy = rill.randn(32, 16, 32, 32)

    def compute():
        y = F.conv2d(x, w, padding=1)
        gx = rill._C._conv2d_backward_input(gy, w, (32, 3, 32, 32), 1, 1, 1, 1)
        gw = rill._C._conv2d_backward_weight(gy, x, (16, 3, 3, 3), 1, 1, 1, 1)
        xr = x.detach().requires_grad_()
        (F.max_pool2d(xr, 2).sum() + F.avg_pool2d(xr, 3, 2, 1).sum()).backward()  # pooling is on oneDNN too
        return y.numpy(), gx.numpy(), gw.numpy(), xr.grad.numpy()

    expected = compute()                # the parent ran convolutions (and its pools exist) before any fork

    def ok():
        got = compute()
        return all(np.allclose(g, e, rtol=1e-4, atol=1e-3) for g, e in zip(got, expected))

    def fork_and_check():
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)            # a hung child dies (SIGALRM) instead of outliving the test
            os._exit(0 if ok() else 1)
        return pid

    children = [fork_and_check()]       # after convolutions, none in flight
    stop = False

    def hammer():                       # convolutions in flight while the main thread forks
        while not stop:
            compute()

    t = threading.Thread(target=hammer)
    t.start()
    for _ in range(6):
        time.sleep(0.02)
        children.append(fork_and_check())
    stop = True
    t.join()
    codes = [os.waitpid(p, 0)[1] for p in children]
    print("CHILDREN", codes)
    sys.exit(0 if all(c == 0 for c in codes) else 1)
""")


def test_conv_in_a_child_forked_during_and_after_convolutions():
    # Note [oneDNN threads]: a child must not inherit an OpenMP pool. The VM runs
    # synchronously here, as in test_blas_fork.py (VM fork safety is another issue).
    flags = ["-S"] if sys.flags.no_site else []
    p = subprocess.run([sys.executable, *flags, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, RILL_VM_MULTI_THREAD="0"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CHILDREN [0, 0, 0, 0, 0, 0, 0]" in p.stdout
