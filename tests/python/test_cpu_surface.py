"""What CPU programs touch before any op: rill.cuda, rill.backends, rill.onnx, rill.nn.parallel and the
legacy typed constructors (rill.FloatTensor, ...) answer as PyTorch's do on a machine without CUDA."""
import numpy as np
import pytest
import torch

import rill
from conftest import assert_close


def test_cuda_reports_no_device_like_torch_without_cuda():
    assert rill.cuda.is_available() is False
    assert rill.cuda.device_count() == 0
    assert rill.cuda.is_initialized() is False
    rill.cuda.manual_seed(0)
    rill.cuda.manual_seed_all(0)
    rill.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="CPU"):
        rill.cuda.current_device()
    with pytest.raises(RuntimeError, match="CPU"):
        rill.cuda.synchronize()


def test_cuda_manual_seed_leaves_the_cpu_generator_alone():
    rill.manual_seed(3)
    a = rill.rand(4)
    rill.manual_seed(3)
    rill.cuda.manual_seed(99)
    assert_close(rill.rand(4), torch.from_numpy(a.numpy()))


def test_device_choice_takes_the_cpu_path():
    device = "cuda" if rill.cuda.is_available() else "mps" if rill.backends.mps.is_available() else "cpu"
    assert rill.ones(2, device=device).device.type == "cpu"


def test_backends_flags_can_be_set():
    assert rill.backends.cudnn.is_available() is False
    rill.backends.cudnn.benchmark = True
    rill.backends.cudnn.deterministic = True
    rill.backends.cuda.matmul.allow_tf32 = True
    assert rill.backends.cuda.is_built() is False
    assert rill.backends.mps.is_built() is False


def test_onnx_and_nn_parallel_import():
    import rill.nn.parallel
    import rill.onnx
    assert rill.nn.parallel.DistributedDataParallel is not None
    assert callable(rill.onnx.export)  # exporting is tested in test_onnx.py


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
                                  "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"])
def test_legacy_constructor_from_data_matches_torch(name):
    data = [[1, 0, 3], [4, 5, 0]]
    got, want = getattr(rill, name)(data), getattr(torch, name)(data)
    assert type(got) is rill.Tensor
    assert_close(got, want)
    assert isinstance(got, getattr(rill, name))
    assert isinstance(want, getattr(torch, name))


def test_legacy_constructor_from_sizes_tensor_and_array():
    assert rill.FloatTensor(2, 3).shape == torch.FloatTensor(2, 3).shape
    assert rill.FloatTensor(rill.Size([4])).shape == (4,)
    assert rill.LongTensor().shape == torch.LongTensor().shape == (0,)
    t = rill.ones(2)
    assert rill.FloatTensor(t) is t
    with pytest.raises(TypeError):
        rill.LongTensor(t)
    with pytest.raises(TypeError):
        torch.LongTensor(torch.ones(2))
    assert_close(rill.DoubleTensor(np.arange(3.0)), torch.DoubleTensor(np.arange(3.0)))


def test_legacy_isinstance_checks_the_dtype():
    assert isinstance(rill.ones(2), rill.FloatTensor)
    assert not isinstance(rill.ones(2), rill.LongTensor)
    assert isinstance(rill.arange(3), rill.LongTensor)
    assert not isinstance([1.0], rill.FloatTensor)
