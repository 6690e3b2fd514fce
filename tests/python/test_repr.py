"""repr(tensor) matches PyTorch's format, character for character (with "torch." -> "rill.")."""
import pytest
import torch

import rill

NAN, INF = float("nan"), float("inf")


def rill_of(t):
    """The rill tensor holding exactly torch tensor t's values, dtype and requires_grad."""
    name = str(t.dtype).replace("torch.", "")
    if name == "bfloat16":
        r = rill.tensor(t.float().tolist(), dtype=rill.float32).to(rill.bfloat16)
    else:
        r = rill.tensor(t.detach().tolist(), dtype=getattr(rill, name)).reshape(tuple(t.shape))
    if t.requires_grad:
        r.requires_grad = True
    return r


CASES = {
    "float_small": lambda: torch.tensor([0.1, 0.25, -0.3333]),
    "float_int_valued": lambda: torch.tensor([1.0, 2.0, 3.0]),
    "float_int_valued_negative": lambda: torch.tensor([-1.0, 20.0, 300.0]),
    "float_int_valued_large": lambda: torch.tensor([1.0, 1e9]),
    "float_sci_mixed": lambda: torch.tensor([1e-5, 1.0, 1000.0]),
    "float_sci_large": lambda: torch.tensor([1.5e10, 2.25]),
    "float_sci_tiny": lambda: torch.tensor([1e-7, 2e-7]),
    "float_4_decimals": lambda: torch.tensor([0.12345, 1.5, 2.0001]),
    "float_negative": lambda: torch.tensor([-1.5, -0.25, 3.75]),
    "float_nan_inf": lambda: torch.tensor([NAN, INF, -INF, 1.5]),
    "float_nan_inf_int_valued": lambda: torch.tensor([NAN, 1.0, -INF]),
    "float_all_nan": lambda: torch.tensor([NAN, NAN]),
    "float_zeros": lambda: torch.zeros(3),
    "float_neg_zero": lambda: torch.tensor([-0.0, 1.0]),
    "float_single": lambda: torch.tensor([3.14159]),
    "int64": lambda: torch.tensor([1, -20, 300]),
    "int64_large": lambda: torch.tensor([2 ** 62, -5]),
    "int32": lambda: torch.tensor([1, 2, 3], dtype=torch.int32),
    "int16_2d": lambda: torch.tensor([[1, -2], [300, 4]], dtype=torch.int16),
    "uint8": lambda: torch.tensor([0, 255], dtype=torch.uint8),
    "int8": lambda: torch.tensor([-128, 127], dtype=torch.int8),
    "bool": lambda: torch.tensor([True, False, True]),
    "bool_2d": lambda: torch.tensor([[True], [False]]),
    "float64": lambda: torch.tensor([1.5, 2.0], dtype=torch.float64),
    "float64_int_valued": lambda: torch.tensor([1.0, 2.0], dtype=torch.float64),
    "float16": lambda: torch.tensor([0.5, 1.25, -3.0], dtype=torch.float16),
    "bfloat16": lambda: torch.tensor([0.5, 1.25, -3.0], dtype=torch.bfloat16),
    "0dim_float": lambda: torch.tensor(3.5),
    "0dim_int_valued_float": lambda: torch.tensor(2.0),
    "0dim_int": lambda: torch.tensor(7),
    "0dim_bool": lambda: torch.tensor(False),
    "0dim_float64": lambda: torch.tensor(0.1, dtype=torch.float64),
    "0dim_nan": lambda: torch.tensor(NAN),
    "empty_1d": lambda: torch.zeros(0),
    "empty_1d_int": lambda: torch.zeros(0, dtype=torch.int64),
    "empty_1d_float64": lambda: torch.zeros(0, dtype=torch.float64),
    "empty_2d": lambda: torch.zeros(2, 0),
    "empty_3d_int32": lambda: torch.zeros(0, 3, 1, dtype=torch.int32),
    "2d": lambda: torch.tensor([[1.5, 2.25], [-3.0, 4.125]]),
    "2d_int": lambda: torch.arange(12).reshape(3, 4),
    "3d": lambda: torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 7,
    "4d": lambda: torch.arange(16).reshape(2, 2, 2, 2),
    "2d_single_column": lambda: torch.tensor([[1.0], [2.5]]),
    "summarised_1d": lambda: torch.arange(2000, dtype=torch.float32),
    "summarised_2d": lambda: torch.arange(1200).reshape(40, 30),
    "summarised_3d": lambda: torch.arange(3000, dtype=torch.float32).reshape(10, 15, 20) / 3,
    "summarised_one_long_row": lambda: torch.arange(1001).reshape(1, 1001),
    "long_1d_wraps": lambda: torch.arange(30, dtype=torch.float32) / 3,
    "long_1d_int_wraps": lambda: torch.arange(100),
    "long_2d_rows_wrap": lambda: torch.arange(60, dtype=torch.float32).reshape(2, 30) * 1.5,
    "requires_grad": lambda: torch.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_float64": lambda: torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True),
    "requires_grad_0dim": lambda: torch.tensor(1.5, requires_grad=True),
    "requires_grad_empty": lambda: torch.zeros(0, 2, requires_grad=True),
    "sci_boundary_1e-4": lambda: torch.tensor([0.0001, 0.1]),
    "sci_boundary_below_1e-4": lambda: torch.tensor([0.00009, 0.1]),
    "sci_ratio_exactly_1000": lambda: torch.tensor([1.5, 1500.0]),
    "sci_ratio_above_1000": lambda: torch.tensor([1.5, 1501.5]),
    "int_valued_1e8": lambda: torch.tensor([1e8, 1.0]),
    "int_valued_above_1e8": lambda: torch.tensor([1e16, 1.0]),
    "sci_with_nan": lambda: torch.tensor([1e-6, NAN, 1e6, -INF]),
    "mixed_2d_negative_nan": lambda: torch.tensor([[-1.5, NAN], [1e3, 0.001]]),
    "float16_range": lambda: torch.tensor([65504.0, 0.001], dtype=torch.float16),
    "exactly_1000_elements": lambda: torch.arange(1000).reshape(10, 100),
    "exactly_1001_elements": lambda: torch.arange(1001, dtype=torch.float64),
    "summarised_negative": lambda: -torch.arange(1500, dtype=torch.float32).reshape(30, 50) / 9,
    "int_negative_widths": lambda: torch.tensor([[-1000, 2], [3, -4]]),
    "bool_3d": lambda: torch.tensor([[[True, False]], [[False, True]]]),
    "requires_grad_2d": lambda: torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_(),
    "long_suffixes_wrap": lambda: (torch.arange(16, dtype=torch.float64) * 1.125).reshape(1, 16).requires_grad_(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_torch(name):
    t = CASES[name]()
    r = rill_of(t)
    expected = repr(t).replace("torch.", "rill.")
    assert repr(r) == expected
    assert str(r) == expected


def test_repr_of_views():
    t = torch.arange(30, dtype=torch.float32).reshape(5, 6) / 4
    r = rill.arange(30, dtype=rill.float32).reshape(5, 6) / 4
    for fn in (lambda x: x.t(), lambda x: x[1:4, ::2], lambda x: x[2], lambda x: x[0, 0], lambda x: x[:, :0]):
        assert repr(fn(r)) == repr(fn(t)).replace("torch.", "rill.")


def test_repr_after_pending_ops():
    r = rill.zeros(3)
    for _ in range(5):
        r += 0.5
    assert repr(r) == "tensor([2.5000, 2.5000, 2.5000])"


def test_format_of_0dim_and_nd():
    assert format(rill.tensor(2.5), ".3f") == "2.500"
    assert f"{rill.zeros(2)}" == repr(rill.zeros(2))
