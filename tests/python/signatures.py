"""The Python signatures of rill's functions and Tensor methods next to PyTorch's own (its aten schemas), for
test_op_keywords.py: which keyword names each accepts, and which of PyTorch's it lacks."""
import inspect
import re

import torch

# Arguments of PyTorch's signatures that a CPU framework without layouts, memory formats or sparse tensors does
# not take; every other name of a matching PyTorch overload must be accepted.
NOT_APPLICABLE = {"memory_format", "layout", "pin_memory", "generator", "device", "requires_grad", "names"}


def rill_params(fn):
    """{name: kind} of a rill callable: "positional" (positional or keyword) or "keyword" (keyword only);
    None when its signature cannot be read."""
    sig = getattr(fn, "__nb_signature__", None)
    overloads = getattr(fn, "__rill_overloads__", None)  # an op bound from signatures: one per overload
    if overloads is not None and len(overloads) > 1:
        sig = [(text, None, None) for text in overloads]
    if sig is not None:  # a nanobind function: one signature per overload; names accepted by any of them
        out = {}
        for text, _, _ in sig:
            head = text[text.index("(") + 1:text.rindex(")")]
            kind = "positional"
            for part in re.split(r",\s*(?![^\[]*\])", head):
                part = part.strip()
                if not part:
                    continue
                if part == "*":
                    kind = "keyword"
                    continue
                if part.startswith("**"):
                    out[part.lstrip("*").split(":")[0]] = "varkw"
                    continue
                if part.startswith("*"):
                    out[part.lstrip("*").split(":")[0]] = "varargs"
                    continue
                name = part.split(":")[0].split("=")[0].strip()
                out.setdefault(name, kind)
        return out
    try:
        s = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = {inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional", inspect.Parameter.KEYWORD_ONLY: "keyword",
             inspect.Parameter.POSITIONAL_ONLY: "positional_only", inspect.Parameter.VAR_POSITIONAL: "varargs",
             inspect.Parameter.VAR_KEYWORD: "varkw"}
    return {n: kinds[p.kind] for n, p in s.parameters.items()}


def torch_overloads(name):
    """PyTorch's tensor overloads of aten::name (not the out= ones, not the list-of-numbers ones):
    [[(argument name, kwarg_only)]]."""
    out = []
    for schema in torch._C._jit_get_schemas_for_operator("aten::" + name):
        args = schema.arguments
        if not args or schema.overload_name.endswith("out") or any(a.name == "out" for a in args):
            continue
        if str(args[0].type) not in ("Tensor", "List[Tensor]", "Optional[Tensor]") and args[0].name == "self":
            continue
        out.append([(a.name, a.kwarg_only) for a in args])
    return out


def missing_keywords(rill_fn, torch_name, method):
    """PyTorch argument names rill_fn does not accept, for the PyTorch overload it comes closest to; [] when it
    accepts every name of some overload; None when either side has no readable signature."""
    params = rill_params(rill_fn)
    overloads = torch_overloads(torch_name)
    if params is None or not overloads:
        return None
    if "varkw" in params.values():
        return []
    best = None
    for ov in overloads:
        miss = []
        for i, (n, kwarg_only) in enumerate(ov):
            if n in NOT_APPLICABLE:
                continue
            if n == "self":  # PyTorch's functions call it input wherever it stands (polygamma(n, input))
                if method:
                    continue
                n = "input"
            kind = params.get(n)
            if kind is None and not (i == 0 and "varargs" in params.values()):
                miss.append(n)
            elif not kwarg_only and kind == "keyword":
                miss.append(n + " (keyword-only in rill, positional in PyTorch)")
        if best is None or len(miss) < len(best):
            best = miss
    return best
