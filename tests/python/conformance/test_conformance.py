"""rill against PyTorch's own op and module databases (OpInfo, ModuleInfo): see db_check.py for what is
checked. expected.json lists what does not pass, and why ("missing", or "fails: <reason>"); each test
fails when its entry is out of date in either direction, so the list only shrinks:
- an op or module not listed must pass;
- one listed that now passes must have its line removed;
- one listed as missing that rill now has must be listed by how it fails.
`python3 tests/python/conformance/update_expected.py` rewrites the file and prints the counts."""
import os

import pytest

if os.environ.get("CI"):
    import expecttest  # noqa: F401  CI installs requirements-dev.txt: a missing database fails, never skips
else:
    pytest.importorskip("expecttest", reason="the databases need it: pip install -r requirements-dev.txt")

import db_check  # noqa: E402

OPS, MODULES = db_check.load_databases()
EXPECTED = db_check.read_expected()
UPDATE = "python3 tests/python/conformance/update_expected.py"


def check_expectation(key, result, listed):
    if listed is None:
        assert result is None, f"{key} {result}: fix it, or list it in expected.json ({UPDATE})"
    elif result is None:
        pytest.fail(f"{key} now passes: remove its line from expected.json ({UPDATE})")
    elif (listed == "missing") != (result == "missing"):
        pytest.fail(f"{key} is listed as {listed!r} but is now {result!r}: update expected.json ({UPDATE})")


@pytest.mark.parametrize("key", list(OPS))
def test_opinfo(key):
    check_expectation(key, db_check.check_op(OPS[key]), EXPECTED["ops"].get(key))


@pytest.mark.parametrize("key", list(MODULES))
def test_moduleinfo(key):
    check_expectation(key, db_check.check_module(MODULES[key]), EXPECTED["modules"].get(key))


def check_gradgrad_expectation(key, result):
    listed = EXPECTED["gradgrad"].get(key)
    if listed is None:
        assert result is None, f"{key} {result}: fix it, or list it under gradgrad in expected.json ({UPDATE})"
    elif result is None:
        pytest.fail(f"{key}'s gradients of gradients now pass: remove its gradgrad line from expected.json ({UPDATE})")


@pytest.mark.parametrize("key", list(OPS))
def test_opinfo_gradgrad(key):
    check_gradgrad_expectation(key, db_check.check_op_gradgrad(OPS[key]))


@pytest.mark.parametrize("name", list(MODULES))
def test_moduleinfo_gradgrad(name):
    check_gradgrad_expectation(name, db_check.check_module_gradgrad(MODULES[name]))


def test_gradgrad_compares_second_order_ops():
    # the check must really compare (not skip everything): the ops whose gradients depend on their inputs
    for key in ("tanh", "nn.functional.gelu", "matmul", "nn.functional.conv2d", "nn.functional.max_pool2d",
                "nn.functional.scaled_dot_product_attention", "cumprod", "linalg.pinv", "softmax", "log_softmax", "nn.functional.layer_norm"):
        db_check.GRADGRAD_CHECKED.discard(key)
        assert db_check.check_op_gradgrad(OPS[key]) is None
        assert key in db_check.GRADGRAD_CHECKED, f"{key}: no sample compared"
    for name in ("nn.Linear", "nn.Conv2d", "nn.LSTM", "nn.LayerNorm", "nn.MultiheadAttention"):
        db_check.GRADGRAD_CHECKED.discard(name)
        assert db_check.check_module_gradgrad(MODULES[name]) is None
        assert name in db_check.GRADGRAD_CHECKED, f"{name}: no input compared"


def test_expected_names_only_database_entries():
    stale = (sorted(set(EXPECTED["ops"]) - set(OPS)) + sorted(set(EXPECTED["modules"]) - set(MODULES))
             + sorted(set(EXPECTED["gradgrad"]) - set(OPS) - set(MODULES)))
    assert not stale, f"expected.json lists entries the databases no longer have: {stale} ({UPDATE})"


def test_expected_reasons_are_missing_or_fails():
    bad = [f"{k}: {r}" for kind in ("ops", "modules", "gradgrad") for k, r in EXPECTED[kind].items()
           if r != "missing" and not r.startswith("fails: ")]
    assert not bad, f"each reason is 'missing' or 'fails: <why>': {bad}"
