"""3-D convolution and pooling, 1-D/3-D transposed convolution, adaptive max pooling and circular padding
(rill/nn/_convnd.py, rill/nn/_poolnd.py) against PyTorch: values, indices and float64 gradients over strides,
paddings, dilations, groups, ceil_mode and odd shapes, functions and modules."""
import itertools

import numpy as np
import pytest
import torch

import rill

TF, F = torch.nn.functional, rill.nn.functional


def to_rill(t):
    return rill.tensor(t.detach().numpy()).requires_grad_(t.requires_grad)


def check(t_fn, r_fn, *tensors, **kwargs):
    """t_fn / r_fn on the same inputs (non-tensors passed as they are): outputs, indices and input gradients agree."""
    ts = [t.clone().requires_grad_(t.is_floating_point()) if isinstance(t, torch.Tensor) else t for t in tensors]
    rs = [to_rill(t) if isinstance(t, torch.Tensor) else t for t in ts]
    to, ro = t_fn(*ts, **kwargs), r_fn(*rs, **kwargs)
    if isinstance(to, tuple):
        np.testing.assert_array_equal(ro[1].numpy(), to[1].numpy())
        to, ro = to[0], ro[0]
    assert tuple(ro.shape) == tuple(to.shape)
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-10)
    if not to.is_floating_point():
        return
    g = torch.randn(to.shape, dtype=to.dtype)
    (to * g).sum().backward()
    (ro * to_rill(g)).sum().backward()
    for t, r in zip(ts, rs):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10)


D = torch.float64


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (s, p, d, g) for s, p, d, g in itertools.product([1, 2, (2, 1, 3)], [0, 1, (2, 0, 1), "same", "valid"], [1, 2],
                                                     [1, 2]) if not (p == "same" and s != 1)])
def test_conv3d(stride, padding, dilation, groups):
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 4, 5, 6, 7, dtype=D), torch.randn(6, 4 // groups, 3, 2, 3, dtype=D), torch.randn(6,
                                                                                                          dtype=D)
    check(TF.conv3d, F.conv3d, x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    check(TF.conv3d, F.conv3d, x[0], w, None, stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    c for c in itertools.product([1, 2, 3], [0, 1], [0, 1], [1, 2], [1, 2]) if c[2] < max(c[0], c[3])])
def test_conv_transpose_1d_3d(stride, padding, output_padding, dilation, groups):
    torch.manual_seed(1)
    kw = dict(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)
    b = torch.randn(6, dtype=D)
    check(TF.conv_transpose3d, F.conv_transpose3d, torch.randn(2, 4, 3, 4, 5, dtype=D),
          torch.randn(4, 6 // groups, 3, 2, 3, dtype=D), b, **kw)
    check(TF.conv_transpose1d, F.conv_transpose1d, torch.randn(2, 4, 5, dtype=D),
          torch.randn(4, 6 // groups, 3, dtype=D), b, **kw)
    check(TF.conv_transpose1d, F.conv_transpose1d, torch.randn(4, 5, dtype=D),
          torch.randn(4, 6 // groups, 3, dtype=D), None, **kw)


def test_conv_transpose3d_mixed_and_unbatched():
    torch.manual_seed(2)
    check(TF.conv_transpose3d, F.conv_transpose3d, torch.randn(4, 3, 4, 5, dtype=D),
          torch.randn(4, 2, 3, 2, 3, dtype=D), None, stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
def test_conv3d_other_dtypes(dtype):
    torch.manual_seed(3)
    x, w = (torch.randn(1, 2, 4, 4, 4) * 4).to(getattr(torch, dtype)), (torch.randn(3, 2, 2, 2, 2) * 4).to(
        getattr(torch, dtype))
    # The reference is the float64 result of the same rounded inputs: PyTorch's own 16-bit kernels round
    # differently per CPU (its bfloat16 conv_transpose3d is 4 units off on an AVX2-only one).
    for t_fn, r_fn, wt in [(TF.conv3d, F.conv3d, w), (TF.conv_transpose3d, F.conv_transpose3d, w.transpose(0, 1))]:
        e, r = t_fn(x.double(), wt.contiguous().double()), r_fn(rill.tensor(x.float().numpy()).to(getattr(rill, dtype)),
                                               rill.tensor(wt.contiguous().float().numpy()).to(getattr(rill, dtype)))
        assert r.dtype == getattr(rill, dtype)
        np.testing.assert_allclose(r.float().numpy(), e.float().numpy(), rtol=2e-2, atol=1e-1)


def test_conv_bad_arguments():
    x, w = rill.randn(1, 2, 4, 4, 4), rill.randn(3, 2, 2, 2, 2)
    with pytest.raises(RuntimeError, match="conv3d"):
        F.conv3d(x, rill.randn(3, 3, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv3d(x, rill.randn(3, 2, 5, 2, 2))
    with pytest.raises(RuntimeError, match="strided"):
        F.conv3d(x, w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Expected 4D"):
        F.conv3d(rill.randn(2, 4, 4), w)
    with pytest.raises(RuntimeError, match="output padding"):
        F.conv_transpose3d(x, w.transpose(0, 1), output_padding=1)
    with pytest.raises(TypeError):
        F.conv3d(x.bool(), w.bool())


@pytest.mark.parametrize("shape,pad", [((2, 5), (1, 2)), ((1, 2, 5), (2, -1)), ((2, 3, 4), (0, 1, 2, 3)),
                                       ((1, 2, 3, 4, 5), (1, 1, 2, 0, -1, 2)), ((3, 4, 5), (-2, -1)),
                                       ((2, 3, 4, 5), (4, 4, 3, 3, 2, 2))])
def test_pad_circular(shape, pad):
    torch.manual_seed(4)
    check(lambda x: TF.pad(x, pad, mode="circular"), lambda x: F.pad(x, pad, mode="circular"),
          torch.randn(*shape, dtype=D))


def test_pad_circular_bad_arguments():
    with pytest.raises(RuntimeError, match="wrapping around"):
        F.pad(rill.randn(1, 2, 3), (4, 0), mode="circular")
    with pytest.raises(NotImplementedError):
        F.pad(rill.randn(3), (1, 1), mode="circular")


X5 = torch.randn(2, 3, 7, 6, 5, dtype=D, generator=torch.Generator().manual_seed(5))


def pool_cases(with_dilation):
    for k, s, p, d, c in itertools.product([2, 3, (3, 2, 1)], [None, 1, 2, (2, 1, 3)], [0, 1],
                                           [1, 2] if with_dilation else [1], [False, True]):
        yield k, s, p, d, c


@pytest.mark.parametrize("k,s,p,d,c", list(pool_cases(True)))
def test_max_pool3d(k, s, p, d, c):
    try:
        TF.max_pool3d(X5, k, s, p, d, c)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            F.max_pool3d(to_rill(X5), k, s, p, d, c)
        return
    check(TF.max_pool3d, F.max_pool3d, X5, k, s, p, d, c, True)
    check(TF.max_pool3d, F.max_pool3d, X5[0], k, s, p, d, c)


@pytest.mark.parametrize("k,s,p,c", [(k, s, p, c) for k, s, p, _, c in pool_cases(False)])
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (True, 5)])
def test_avg_pool3d(k, s, p, c, count_include_pad, divisor):
    try:
        TF.avg_pool3d(X5, k, s, p, c, count_include_pad, divisor)
    except RuntimeError:
        return
    check(TF.avg_pool3d, F.avg_pool3d, X5, k, s, p, c, count_include_pad, divisor)
    check(TF.avg_pool3d, F.avg_pool3d, (X5 * 10).long(), k, s, p, c, count_include_pad, divisor)


@pytest.mark.parametrize("norm_type", [2, 1.5])
def test_avg_and_lp_pool3d_keep_nan_in_its_windows(norm_type):
    """A NaN (here from x ** 1.5 of a negative x) reaches only the windows and gradients that hold it, as in
    PyTorch: the ones from all-positive windows and from elements no window reads stay finite."""
    x = torch.randn(2, 7, 7, 7, generator=torch.Generator().manual_seed(0), dtype=D)
    x[0, :4, :4, :4] = x[0, :4, :4, :4].abs()
    check(lambda t: TF.lp_pool3d(t, norm_type, 2), lambda t: F.lp_pool3d(t, norm_type, 2), x)
    check(lambda t: TF.avg_pool3d(t.pow(norm_type), 3, 2, 1, True), lambda t: F.avg_pool3d(t.pow(norm_type), 3, 2,
                                                                                            1, True), x)
    rx = to_rill(x).requires_grad_()
    rill.nn.LPPool3d(norm_type, 2)(rx).sum().backward()
    tx = x.clone().requires_grad_()
    torch.nn.LPPool3d(norm_type, 2)(tx).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-10)
    unread = rx.grad.numpy()[:, 6][x[:, 6].numpy() > 0]  # depth 6 is in no window
    assert np.isfinite(rx.grad.numpy()[0, :4, :4, :4]).all() and unread.size and (unread == 0).all()


@pytest.mark.parametrize("size", [1, 2, 3, (4, None, 2), (7, 6, 5), (9, 1, 4)])
def test_adaptive_pool3d(size):
    check(TF.adaptive_avg_pool3d, F.adaptive_avg_pool3d, X5, size)
    check(TF.adaptive_max_pool3d, F.adaptive_max_pool3d, X5, size, True)
    check(TF.adaptive_max_pool3d, F.adaptive_max_pool3d, X5[1], size)


@pytest.mark.parametrize("size", [1, 3, 4, 9])
def test_adaptive_max_pool_1d_2d(size):
    check(TF.adaptive_max_pool1d, F.adaptive_max_pool1d, X5[:, :, 0, 0], size, True)
    check(TF.adaptive_max_pool2d, F.adaptive_max_pool2d, X5[:, :, 0], (size, 2), True)
    check(TF.adaptive_max_pool2d, F.adaptive_max_pool2d, X5[0, :, 0], (None, size))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_adaptive_avg_pool3d_16bit_rounds_as_torch(dtype):
    """PyTorch sums a 16-bit window in the dtype: rill rounds each addition the same way, bit for bit."""
    x = torch.randn(1, 4, 5, 6, 7).to(getattr(torch, dtype))
    r = F.adaptive_avg_pool3d(rill.tensor(x.float().numpy()).to(getattr(rill, dtype)), (2, 3, 4))
    assert r.float().tolist() == TF.adaptive_avg_pool3d(x, (2, 3, 4)).float().tolist()


def test_pool_bad_arguments():
    x = rill.randn(1, 2, 4, 4, 4)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="Expected 4D or 5D"):
        F.avg_pool3d(rill.randn(4, 4), 2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="output_size"):
        F.adaptive_max_pool3d(x, (1, 2))
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool3d(x, 5)


def module_pair(name, *args, **kwargs):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs).double()
    rm = getattr(rill.nn, name)(*args, **kwargs).to(rill.float64)
    rm.load_state_dict({k: rill.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, rm


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("Conv3d", (4, 6, (3, 2, 2)), dict(stride=(1, 2, 1), padding=1, groups=2), (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 3, 3), dict(padding="same", dilation=2, bias=False), (2, 6, 7, 6)),
    ("Conv3d", (2, 3, 2), dict(padding=1, padding_mode="circular"), (1, 2, 4, 5, 3)),
    ("Conv3d", (2, 3, 2), dict(padding=(1, 0, 1), padding_mode="reflect"), (1, 2, 4, 5, 3)),
    ("Conv1d", (2, 3, 3), dict(padding=2, padding_mode="circular"), (2, 2, 7)),
    ("Conv2d", (2, 3, 3), dict(padding=(1, 2), padding_mode="circular"), (2, 2, 5, 6)),
    ("ConvTranspose1d", (4, 2, 3), dict(stride=2, output_padding=1, groups=2), (2, 4, 5)),
    ("ConvTranspose3d", (4, 2, (2, 3, 2)), dict(stride=2, padding=(0, 1, 0), dilation=(1, 1, 2)), (1, 4, 3, 3, 3)),
    ("MaxPool3d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 6, 7, 5)),
    ("AvgPool3d", (2,), dict(stride=1, count_include_pad=False, padding=1), (2, 3, 4, 4, 4)),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, (2, 3, 5, 4, 7)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (3, 7, 5)),
    ("AdaptiveMaxPool3d", (2,), {}, (2, 2, 5, 3, 4)),
    ("LPPool3d", (2.0, 2), dict(stride=1), (2, 2, 4, 4, 3)),
    ("BatchNorm3d", (3,), {}, (2, 3, 4, 3, 2)),
    ("CircularPad3d", ((1, 0, 2, 1, 0, 1),), {}, (1, 2, 3, 4, 3)),
])
def test_modules(name, args, kwargs, shape):
    tm, rm = module_pair(name, *args, **kwargs)
    x = torch.randn(*shape, dtype=D, generator=torch.Generator().manual_seed(6))
    if name == "LPPool3d":
        x = x.abs() + 0.1
    check(tm, rm, x)
    for (n, tp), (_, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        np.testing.assert_allclose(rp.grad.numpy(), tp.grad.numpy(), rtol=1e-7, atol=1e-10, err_msg=n)
    for (n, tb), (_, rb) in zip(tm.named_buffers(), rm.named_buffers()):
        np.testing.assert_allclose(rb.numpy(), tb.numpy(), rtol=1e-7, atol=1e-10, err_msg=n)


def test_conv_transpose_output_size():
    tm, rm = module_pair("ConvTranspose3d", 2, 3, 3, stride=2)
    x = torch.randn(1, 2, 3, 4, 3, dtype=D)
    check(lambda v: tm(v, output_size=(8, 10, 7)), lambda v: rm(v, output_size=(8, 10, 7)), x)
    with pytest.raises(ValueError):
        rm(to_rill(x), output_size=(20, 10, 7))


def test_batch_norm_empty_batch():
    tm, rm = module_pair("BatchNorm3d", 3)
    check(tm, rm, torch.randn(0, 3, 2, 2, 2, dtype=D))
    assert rm.running_mean.tolist() == [0.0] * 3 and rm.weight.grad.tolist() == [0.0] * 3


@pytest.mark.parametrize("shape,k,d,p,s", [((2, 3, 5, 6), 2, 1, 0, 1), ((3, 5, 6), (2, 3), (1, 2), (1, 0), (2, 1)),
                                           ((1, 2, 7, 7), 3, 2, 1, 2), ((0, 2, 4, 4), 2, 1, 1, 1)])
def test_unfold_fold(shape, k, d, p, s):
    torch.manual_seed(7)
    x = torch.randn(*shape, dtype=D)
    check(TF.unfold, F.unfold, x, k, d, p, s)
    cols = TF.unfold(x, k, d, p, s)
    check(TF.fold, F.fold, cols, shape[-2:], k, d, p, s)
    tm, rm = torch.nn.Fold(shape[-2:], k, d, p, s), rill.nn.Fold(shape[-2:], k, d, p, s)
    check(tm, rm, cols)
    check(torch.nn.Unfold(k, d, p, s), rill.nn.Unfold(k, d, p, s), x)


def test_fold_bad_arguments():
    with pytest.raises(RuntimeError, match="divisible"):
        F.fold(rill.randn(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(rill.randn(1, 4, 5), (3, 3), 2)
    with pytest.raises(RuntimeError, match="at least one"):
        F.unfold(rill.randn(1, 1, 2, 2), 3)


@pytest.mark.parametrize("n,shape,k,kwargs", [
    (2, (2, 3, 9, 8), 3, dict(output_size=(3, 4))), (2, (3, 9, 9), (2, 3), dict(output_ratio=(0.5, 0.5))),
    (2, (1, 1, 5, 5), 2, dict(output_size=1)), (3, (2, 2, 5, 6, 7), 2, dict(output_size=(2, 3, 4))),
    (3, (2, 5, 6, 5), (2, 1, 2), dict(output_ratio=(0.5, 0.6, 0.7)))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_with_given_samples(n, shape, k, kwargs, dtype):
    """With PyTorch's _random_samples the windows, values, indices and gradients are PyTorch's."""
    g = torch.Generator().manual_seed(8)
    x = torch.randn(*shape, dtype=dtype, generator=g)
    lead = shape[:2] if len(shape) == n + 2 else (1, shape[0])
    u = torch.rand(*lead, n, dtype=dtype, generator=g)
    name = f"fractional_max_pool{n}d"
    check(lambda v: getattr(TF, name)(v, k, return_indices=True, _random_samples=u, **kwargs),
          lambda v: getattr(F, name)(v, k, return_indices=True, _random_samples=to_rill(u), **kwargs), x)


def test_fractional_max_pool_random_and_errors():
    y, idx = rill.nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True)(rill.randn(2, 3, 8, 8))
    assert y.shape == (2, 3, 4, 4) and idx.dtype == rill.int64
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        rill.nn.FractionalMaxPool3d(2)
    with pytest.raises(RuntimeError, match="too large"):
        F.fractional_max_pool3d(rill.randn(1, 1, 5, 5, 5), 3, output_size=3)


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_draws_torch_samples_and_takes_empty_batches(n):
    # without _random_samples both draw their window starts from the generator: the same seed, the same windows
    fn = f"fractional_max_pool{n}d"
    x = torch.randn((2, 3) + (9,) * n)
    for seed in range(20):
        torch.manual_seed(seed)
        expected, expected_idx = getattr(torch.nn.functional, fn)(x, 3, output_size=(2,) * (n - 1) + (3,),
                                                                  return_indices=True)
        rill.manual_seed(seed)
        got, got_idx = getattr(rill.nn.functional, fn)(rill.tensor(x.numpy()), 3, output_size=(2,) * (n - 1) + (3,),
                                                       return_indices=True)
        np.testing.assert_array_equal(got_idx.numpy(), expected_idx.numpy())
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    empty = getattr(rill.nn.functional, fn)(rill.randn((0, 3) + (7,) * n), 2, output_size=3, return_indices=True)
    assert tuple(empty[0].shape) == (0, 3) + (3,) * n and empty[1].dtype == rill.int64
