"""PyTorch's keyword names, checked over the whole API against torch's own signatures (its aten schemas, or
inspect for its Python functions): every function of rill, rill.nn.functional and every Tensor method that
PyTorch also has accepts each argument name of some PyTorch overload of it (self is input for functions),
positionally where PyTorch takes it positionally. Known gaps are listed in keyword_gaps.txt, which can only
shrink: a listed gap that is closed fails too, so the file is kept exact."""
import inspect
import pathlib

import pytest
import torch
import torch.nn.functional as TF

import rill
import rill.nn.functional as RF
from signatures import missing_keywords, rill_params

GAPS_FILE = pathlib.Path(__file__).with_name("keyword_gaps.txt")


def torch_python_missing(rill_fn, torch_fn):
    """For a PyTorch Python function (torch.nn.functional's): its parameter names rill_fn lacks."""
    params = rill_params(rill_fn)
    if params is None:
        return None
    if "varkw" in params.values():
        return []
    miss = []
    for name, p in inspect.signature(torch_fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind = params.get(name)
        if kind is None and "varargs" not in params.values():
            miss.append(name)
        elif p.kind == p.POSITIONAL_OR_KEYWORD and kind == "keyword":
            miss.append(name + " (keyword-only in rill, positional in PyTorch)")
    return miss


def surface():
    """(where, name, missing names or None) for every callable both frameworks have."""
    for where, rmod, tmod, method in [("rill", rill, torch, False), ("Tensor", rill.Tensor, torch.Tensor, True),
                                      ("F", RF, TF, False)]:
        for name in sorted(dir(rmod)):
            if name.startswith("_") or not hasattr(tmod, name):
                continue
            fn, tfn = getattr(rmod, name), getattr(tmod, name)
            if not callable(fn) or isinstance(fn, type):
                continue
            try:
                inspect.signature(tfn)
                python_fn = inspect.isfunction(tfn)
            except (TypeError, ValueError):
                python_fn = False
            yield where, name, torch_python_missing(fn, tfn) if python_fn else missing_keywords(fn, name, method)


def read_gaps():
    gaps = {}
    for line in GAPS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, names = line.partition(":")
            gaps[key.strip()] = names.strip()
    return gaps


def test_every_function_and_method_takes_pytorchs_keywords():
    found = {f"{where}.{name}": ", ".join(miss) for where, name, miss in surface() if miss}
    gaps = read_gaps()
    new = {k: v for k, v in found.items() if gaps.get(k) != v}
    closed = sorted(set(gaps) - set(found))
    assert not new, f"arguments PyTorch names that rill does not accept (fix them; only if that is out of scope, " \
                    f"list them in {GAPS_FILE.name}): {new}"
    assert not closed, f"gaps now closed: delete them from {GAPS_FILE.name}: {closed}"


def test_the_check_reads_most_of_the_surface():
    results = list(surface())
    readable = [r for r in results if r[2] is not None]
    assert len(readable) > 350 and len(readable) > 0.9 * len(results)


def test_schema_bound_ops_take_exactly_pytorchs_names():
    for name in rill._C._schema_functions:
        if name.startswith("_") and not hasattr(torch, name):
            continue  # rill's own internal ops (the optimizer updates graph mode traces): no PyTorch names to match
        assert missing_keywords(getattr(rill, name), name, method=False) == [], name
        if hasattr(torch.Tensor, name) and hasattr(rill.Tensor, name):
            assert missing_keywords(getattr(rill.Tensor, name), name, method=True) == [], name


@pytest.mark.parametrize("call", [
    lambda m, F, a, b: m.add(input=a, other=b, alpha=2),
    lambda m, F, a, b: a.sum(dim=1, keepdim=True),
    lambda m, F, a, b: F.softplus(a, beta=2, threshold=10),
    lambda m, F, a, b: m.logaddexp(input=a, other=b),
    lambda m, F, a, b: m.nan_to_num(input=a / 0, nan=1.0, posinf=2.0, neginf=-2.0),
    lambda m, F, a, b: a.view(size=(4, 3)).permute(dims=(1, 0)).reshape(shape=(12,)),
    lambda m, F, a, b: m.pow(a, exponent=2) + a.pow(exponent=3),
    lambda m, F, a, b: m.subtract(input=a, other=b, alpha=0.5),
    lambda m, F, a, b: m.mm(input=a, mat2=b.t()),
    lambda m, F, a, b: a.transpose(dim0=0, dim1=1).narrow(dim=0, start=1, length=2),
])
def test_keyword_calls_match_pytorch(call):
    import numpy as np
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.5
    y = np.flip(x).copy()
    r = call(rill, RF, rill.tensor(x), rill.tensor(y))
    t = call(torch, TF, torch.tensor(x), torch.tensor(y))
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)


def test_overloads_take_the_first_signature_whose_types_fit():
    x = rill.tensor([5, 7, 9])
    assert rill.remainder(x, 3).tolist() == [2, 1, 0]  # remainder_scalar(Tensor self, Scalar other)
    assert rill.remainder(5, x).tolist() == [0, 5, 5]  # rremainder_scalar(Scalar self, Tensor other)
    assert rill.remainder(x, rill.tensor([4, 4, 4])).tolist() == [1, 3, 1]
    assert x.pow(exponent=2).tolist() == [25, 49, 81] and rill.pow(2, x).tolist() == [32, 128, 512]
    assert len(rill.remainder.__rill_overloads__) == 3 and rill.remainder.__text_signature__ is None
    with pytest.raises(TypeError, match=r"\[remainder\] received an invalid combination of arguments: got "
                                        r"\(Tensor, str\); it takes one of:\n  remainder\(Tensor input, Tensor other"):
        rill.remainder(x, "a")
    with pytest.raises(TypeError, match=r"got \(int, other=str\)"):
        x.remainder(2, other="b")


def test_nn_functional_inplace_forms_write_into_input():
    y = rill.tensor([-1.0, 2.0])
    assert RF.elu(y, 1.0, True) is y and y.tolist()[1] == 2.0 and y.tolist()[0] < 0
    z = rill.tensor([-1.0, 2.0])
    assert RF.leaky_relu(z, negative_slope=0.5).tolist() == [-0.5, 2.0] and z.tolist() == [-1.0, 2.0]
    with pytest.raises(TypeError, match="inplace"):
        RF.silu(z, inplace=1)


def test_bound_ops_pickle_and_copy_by_name():
    import copy
    import pickle
    for fn in (RF.gelu, RF.elu, rill.remainder, rill.Tensor.relu):
        assert copy.deepcopy(fn) is fn and pickle.loads(pickle.dumps(fn)) is fn
