"""Anomaly detection (rill.autograd.detect_anomaly / set_detect_anomaly) against PyTorch's."""
import warnings

import pytest
import torch

import rill


def _nan_backward_error(lib, **kwargs):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(**kwargs):
            y = (x / x).sum()
            try:
                y.backward()
            except RuntimeError as e:
                return str(e).split("\n")[0]
    return None


def test_nan_gradient_raises_as_torch():
    assert _nan_backward_error(rill) == _nan_backward_error(torch) == (
        "Function 'DivBackward0' returned nan values in its 1th output.")
    assert _nan_backward_error(rill, check_nan=False) is None is _nan_backward_error(torch, check_nan=False)
    assert not rill.is_anomaly_enabled() and rill.is_anomaly_check_nan_enabled()


def test_without_anomaly_mode_nan_gradients_pass():
    x = rill.tensor([0.0], requires_grad=True)
    (x / x).sum().backward()
    assert x.grad.isnan().all().item()


def test_switches_restore_and_decorate():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = rill.autograd.detect_anomaly()
    with mode:
        assert rill.is_anomaly_enabled()
    assert not rill.is_anomaly_enabled()
    with rill.autograd.set_detect_anomaly(True, check_nan=False):
        assert rill.is_anomaly_enabled() and not rill.is_anomaly_check_nan_enabled()
    assert not rill.is_anomaly_enabled() and rill.is_anomaly_check_nan_enabled()
    rill.autograd.set_detect_anomaly(True)
    try:
        assert rill.is_anomaly_enabled()
    finally:
        rill.set_anomaly_enabled(False)
    assert not rill.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @rill.autograd.detect_anomaly()
        def step(x):
            assert rill.is_anomaly_enabled()
            (x.sqrt() * 0).sum().backward()  # d sqrt at 0 is inf; inf * 0 is NaN
    with pytest.raises(RuntimeError, match="returned nan values"):
        step(rill.tensor([0.0, 4.0], requires_grad=True))
    assert not rill.is_anomaly_enabled()


def test_finite_backward_under_anomaly_mode_is_unchanged():
    x = rill.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rill.autograd.detect_anomaly():
            (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
