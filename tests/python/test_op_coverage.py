"""Coverage from the registry: every op rill registers (rill._C._op_names(), the C++ ops::all()) is exercised
by some row of op_cases.CASES, which test_op_parity.py checks against PyTorch, or is listed below with the
reason it is not. The ops a row exercises are read off the VM trace of running it forward and backward, so
internal ops (add_scalar, softplus_backward, conv2d_backward_input, ...) count through the rows of the public
ops that use them; composite ops, which issue no instruction of their own, count through a row of their name."""
import json

import pytest

import rill
from op_cases import CASES
from test_op_parity import base_arrays, laid_out, leaves_of

# op -> why no op_cases row exercises it (each checked elsewhere, named here).
EXEMPT = {
    "rand": "random values: tests/python/test_creation.py checks ranges, moments and seeding",
    "randn": "random values: tests/python/test_creation.py checks ranges, moments and seeding",
    "randint": "random values: tests/python/test_creation.py checks ranges and seeding",
    "dropout": "random masks: tests/python/test_nn_functional.py checks the kept fraction and scaling",
    "rmaximum_scalar": "number-first form made with its family; no Python spelling reaches it (torch.maximum "
                       "takes a tensor first)",
    "rminimum_scalar": "number-first form made with its family; no Python spelling reaches it (torch.minimum "
                       "takes a tensor first)",
    "rfmod_scalar": "number-first form made with its family; no Python spelling reaches it (torch.fmod takes a "
                    "tensor first, and % is remainder)",
}
# The comm ops run between processes: tests/python/test_distributed.py runs each over 2, 3 and 4 ranks.
EXEMPT.update({op: "communication between ranks: tests/python/test_distributed.py, under mpirun" for op in (
    "comm_init", "comm_finalize", "comm_new_group", "comm_destroy_group", "comm_barrier", "comm_all_reduce",
    "comm_broadcast", "comm_reduce", "comm_all_gather", "comm_reduce_scatter", "comm_send", "comm_recv")})
EXEMPT.update({op: "graph boxing between SBPs, only in a global job lowered to one rank: "
                   "tests/python/test_graph_global.py under mpirun, tests/cpp/graph/sbp_test.cpp" for op in (
    "_boxing_all_reduce", "_boxing_all_gather", "_boxing_reduce_scatter", "_boxing_partial", "_boxing_send",
    "_boxing_recv", "_to_global")})
EXEMPT["_sleep"] = ("rill.experimental.sleep, a kernel of a fixed duration with no PyTorch counterpart: "
                    "tests/python/test_graph_global.py checks its value and gradient")
EXEMPT.update({op: "optimizer updates: tests/python/test_fused_optim.py checks them against rill.optim and "
                   "torch.optim over 200 steps" for op in ("_sgd_update", "_adam_update", "_rmsprop_update")})
EXEMPT.update({
    "restride": "graph mode's re-read of memory it did not see being made: tests/cpp/graph/tracer_test.cpp",
    "restride_scatter": "graph mode's write into part of a tensor: tests/python/test_graph.py (partial writes)",
    "graph_launch": "one nn.Graph call: tests/python/test_graph.py",
    "_delay_tick": "rill.experimental.delay_tick, a view in eager mode: tests/python/test_graph_delay.py, in eager "
                   "and graph mode (the trace shows each piece read delay_num pieces late)",
    "_ssp_variable_proxy": "graph mode's SSP copy of a variable, added by the ssp pass only: tests/python/"
                           "test_graph.py (one stage) and test_graph_global.py (two, against an eager replay)",
    "_multi_sgd_update": "graph mode's update of a parameter group, added by the fuse_optimizer pass only: "
                         "tests/python/test_graph.py against the unfused graph (bit for bit)",
    "_multi_adam_update": "graph mode's update of a parameter group, added by the fuse_optimizer pass only: "
                          "tests/python/test_graph.py against the unfused graph (bit for bit)",
    "_multi_rmsprop_update": "graph mode's update of a parameter group, added by the fuse_optimizer pass only: "
                             "tests/python/test_graph.py against the unfused graph (bit for bit)",
    "_linear_activation": "graph mode's linear and activation, added by the fuse_activation pass only: "
                          "tests/python/test_graph.py against torch and against the unfused graph",
    "_conv2d_backward_weight_bias": "graph mode's conv weight and bias gradients, added by the fuse_bias_gradient "
                                    "pass only: tests/python/test_graph.py against torch and the unfused graph",
    "_conv2d_activation": "graph mode's conv2d and activation, added by the fuse_activation pass only: "
                          "tests/python/test_graph.py against torch and against the unfused graph",
    "_fused_elementwise": "graph mode's fused chains: tests/cpp/kernels/fused_test.cpp against the steps one by one, "
                          "tests/python/test_graph.py against the unfused graph and eager",
})


def exercised_ops(tmp_path):
    names = {c.name for c in CASES}
    trace = tmp_path / "cases.json"
    with rill.vm_trace(trace):
        for c in CASES:
            spec = c.specs[0]
            arrays = base_arrays(spec, c.dtypes[0], seed=1)
            leaves = leaves_of(rill, arrays, spec, c.dtypes[0], c.differentiable)
            out = c.rill_fn(*laid_out(leaves, spec))
            if c.differentiable:
                out.sum().backward()
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return names | {e["name"] for e in events if e.get("cat") == "submit"}


def test_every_registered_op_has_an_op_cases_row(tmp_path):
    ops = rill._C._op_names()
    assert len(ops) > 100
    covered = exercised_ops(tmp_path)
    missing = [op for op in ops if op not in covered and op not in EXEMPT]
    assert not missing, f"ops without an op_cases.CASES row (add one, or an EXEMPT entry saying why): {missing}"


def test_exemptions_name_registered_ops_only():
    stale = sorted(set(EXEMPT) - set(rill._C._op_names()))
    assert not stale, f"EXEMPT lists ops that no longer exist: {stale}"
