"""rill.onnx.export: a model's inference step, traced by graph mode's tracer, written as ONNX (docs/graph.md).

    rill.onnx.export(model, x, "model.onnx", input_names=["x"], output_names=["y"],
                     dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
"""
import os

import numpy as np

import rill
from rill import _C

__all__ = ["export"]

# Note [Exporting a traced job]
# export traces model(*args) as nn.Graph traces build() (eval mode, no_grad) into a job, and maps each op the
# outputs need to ONNX nodes through _OPS, one function per op type. A job's attrs hold the traced numbers (a
# view's size (7, 12, 8) is (length, batch * heads, head_dim)), so for each dynamic axis export traces once
# more with that dim _DELTA larger: an attr entry or blob dim that moves is symbolic, coef * size + base0 of
# one axis (_Dim). Reshape targets then copy a dim unchanged from the input (0), leave one dim to ONNX (-1),
# or compute it from Shape(input); an attr that moves where ONNX needs a constant raises. Views become ONNX's
# value ops (Reshape, Transpose, Slice, Gather, Expand); restride, which reads memory, maps only when it is a
# reshape or a slice of a contiguous root.

_DELTA = 3
_INT64_MAX = 2**63 - 1
_DTYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9, "float16": 10,
           "float64": 11, "bfloat16": 16}
_SUPPORTED_KWARGS = {"verbose", "training", "do_constant_folding", "keep_initializers_as_inputs"}


class _Dim:
    """One dim or shape-attr entry: its traced value and how it moves per dynamic axis (coefs: axis -> int)."""

    def __init__(self, base, coefs):
        self.base, self.coefs = base, coefs

    def static(self):
        return not self.coefs

    def __eq__(self, other):
        return isinstance(other, _Dim) and self.base == other.base and self.coefs == other.coefs


def _onnx_type(dtype):
    if dtype not in _DTYPES:
        raise RuntimeError(f"[onnx.export] dtype {dtype} has no ONNX type")
    return _DTYPES[dtype]


def _contiguous(shape):
    strides, n = [], 1
    for s in reversed(shape):
        strides.insert(0, n)
        n *= max(s, 1)
    return strides


class _Op:
    """One job op as a mapping function sees it: its inputs' ONNX names, attrs and scalars (checked not to move
    with a dynamic axis), symbolic shapes, and emit() to add nodes."""

    def __init__(self, ex, op):
        self.ex, self.op, self.type = ex, op, op["op_type"]
        self.x = [self._name(lbn) for lbn in op["inputs"]]

    def _name(self, lbn):
        if lbn not in self.ex.names:
            self.fail(f"it reads {lbn}, an output of an op that ONNX export maps only in part")
        return self.ex.names[lbn]

    def where(self):
        return f"op '{self.type}'" + (f" (at {self.op['loc']})" if self.op.get("loc") else "")

    def fail(self, what):
        raise RuntimeError(f"[onnx.export] {self.where()}: {what}")

    def values(self, get):
        """get(op) of this op in each job (the first the traced one, then one per dynamic axis)."""
        return [get(job["ops"][self.op["name"]]) for job in self.ex.jobs]

    def attr(self, key):
        values = self.values(lambda op: op["attrs"].get(key))
        if any(v != values[0] for v in values):
            self.fail(f"its attr '{key}' changes with the size of a dynamic axis; ONNX export cannot express that "
                      "yet (export without dynamic_axes)")
        return values[0]

    def scalar(self, i):
        values = self.values(lambda op: op["scalars"][i])
        if any(v != values[0] for v in values):
            self.fail("its scalar changes with the size of a dynamic axis (a number computed from a shape); "
                      "ONNX export cannot express that yet")
        return values[0]

    def in_shape(self, i):
        return self.ex.shape(self.op["inputs"][i])

    def out_shape(self, k=0):
        return self.ex.shape(self.op["outputs"][k])

    def in_dtype(self, i):
        return self.ex.descs[self.op["inputs"][i]]["dtype"]

    def out_dtype(self, k=0):
        return self.op["output_descs"][k]["dtype"]

    def emit(self, op_type, inputs, n_outputs=1, **attrs):
        return self.ex.emit(op_type, inputs, n_outputs, **attrs)

    def const(self, value, dtype="int64"):
        return self.ex.const(np.asarray(value, dtype=np.dtype(dtype)))

    def cast(self, name, source, dtype):
        return name if source == dtype else self.emit("Cast", [name], to=_onnx_type(dtype))

    def inputs_as(self, dtype):
        return [self.cast(x, self.in_dtype(i), dtype) for i, x in enumerate(self.x)]

    def shape_tensor(self, dims):
        """A 1-D int64 tensor of dims (ints or _Dims of one axis, computed from that axis' input)."""
        pieces, run = [], []
        for d in dims:
            if isinstance(d, int) or d.static():
                run.append(d if isinstance(d, int) else d.base)
                continue
            if run:
                pieces.append(self.const(run))
                run = []
            pieces.append(self.ex.dim_expr(self, d))
        if run or not pieces:
            pieces.append(self.const(run))
        return pieces[0] if len(pieces) == 1 else self.emit("Concat", pieces, axis=0)

    def dim(self, d, ndim):
        return d + ndim if d < 0 else d


# --- the mapping table: op_type -> function(_Op) returning the ONNX names of the op's outputs ---------------
def _elementwise(onnx_op, scalar=None):
    def build(o):
        xs = o.inputs_as(o.out_dtype()) if onnx_op not in _COMPARE else o.x
        if scalar == "right":
            xs = [xs[0], o.const(o.scalar(0), o.in_dtype(0) if onnx_op in _COMPARE else o.out_dtype())]
        elif scalar == "left":
            xs = [o.const(o.scalar(0), o.out_dtype()), xs[0]]
        if onnx_op == "NotEqual":
            return o.emit("Not", [o.emit("Equal", xs)])
        return o.emit(onnx_op, xs)
    return build


_COMPARE = {"Equal", "NotEqual", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}


def _linear(o):
    w = o.emit("Transpose", [o.x[1]], perm=[1, 0])
    y = o.emit("MatMul", [o.x[0], w])
    return o.emit("Add", [y, o.x[2]]) if len(o.x) == 3 else y


def _conv2d(o):
    pad = o.attr("padding")
    top, bottom, left, right = pad if len(pad) == 4 else (pad[0], pad[0], pad[1], pad[1])
    return o.emit("Conv", o.x, pads=[top, left, bottom, right], strides=o.attr("stride"),
                  dilations=o.attr("dilation"), group=o.attr("groups"))


def _max_pool2d(o):
    k, ph, pw = o.attr("kernel_size"), *o.attr("padding")
    y = o.emit("MaxPool", o.x, kernel_shape=k, strides=o.attr("stride") or k, pads=[ph, pw, ph, pw],
               dilations=o.attr("dilation"), ceil_mode=int(o.attr("ceil_mode")))
    return [y] if o.type == "max_pool2d" else [y, None]


def _avg_pool2d(o):
    if o.attr("divisor_override"):
        o.fail("divisor_override has no ONNX mapping yet")
    k, ph, pw = o.attr("kernel_size"), *o.attr("padding")
    return o.emit("AveragePool", o.x, kernel_shape=k, strides=o.attr("stride") or k, pads=[ph, pw, ph, pw],
                  ceil_mode=int(o.attr("ceil_mode")), count_include_pad=int(o.attr("count_include_pad")))


def _layer_norm(o):
    return [o.emit("LayerNormalization", o.x, axis=o.attr("axis"), epsilon=o.attr("eps")), None, None]


def _gelu(o):
    x, dt = o.x[0], o.out_dtype()
    if o.attr("approximate") == "tanh":
        cube = o.emit("Mul", [o.emit("Mul", [x, x]), x])
        inner = o.emit("Add", [x, o.emit("Mul", [cube, o.const(0.044715, dt)])])
        t = o.emit("Tanh", [o.emit("Mul", [inner, o.const(np.sqrt(2 / np.pi), dt)])])
    else:
        t = o.emit("Erf", [o.emit("Div", [x, o.const(np.sqrt(2.0), dt)])])
    half = o.emit("Mul", [x, o.const(0.5, dt)])
    return o.emit("Mul", [half, o.emit("Add", [t, o.const(1.0, dt)])])


def _reduce(onnx_op):
    def build(o):
        x = o.x[0]  # in the dtype= asked for: the op's inference converts its input first
        dims = [o.dim(d, len(o.in_shape(0))) for d in o.attr("dim")]
        keep = int(o.attr("keepdim"))
        if not dims:
            return o.emit(onnx_op, [x], keepdims=keep)
        if onnx_op == "ReduceSum" or o.ex.opset >= 18:
            return o.emit(onnx_op, [x, o.const(dims)], keepdims=keep)
        return o.emit(onnx_op, [x], axes=dims, keepdims=keep)
    return build


def _view(o):
    src, out = o.in_shape(0), o.out_shape(0)
    target = [d if d.static() or i >= len(src) or src[i] != d else 0 for i, d in enumerate(out)]
    moving = [i for i, d in enumerate(target) if not isinstance(d, int) and not d.static()]
    several = [i for i in moving if len(target[i].coefs) > 1]  # a product of axes: only -1 can stand for it
    if len(several) > 1:
        o.fail("its shape has several dims that move with several dynamic axes; ONNX export cannot express "
               "that yet")
    if moving:
        target[(several or moving)[0]] = -1  # ONNX infers it; the other moving dims are computed
    return o.emit("Reshape", [o.x[0], o.shape_tensor(target)])


def _transpose(o):
    n = len(o.in_shape(0))
    perm = list(range(n))
    if o.type == "t":
        perm.reverse()
    elif o.type == "permute":
        perm = [o.dim(d, n) for d in o.attr("dims")]
    elif n:
        a, b = o.dim(o.attr("dim0"), n), o.dim(o.attr("dim1"), n)
        perm[a], perm[b] = b, a
    return o.emit("Transpose", o.x, perm=perm)


def _expand(o):
    src, out = o.in_shape(0), o.out_shape(0)
    lead = len(out) - len(src)
    target = [1 if i >= lead and src[i - lead] == d else d for i, d in enumerate(out)]
    for d in target:
        if not isinstance(d, int) and len(d.coefs) > 1:
            o.fail("its size moves with several dynamic axes; ONNX export cannot express that yet")
    return o.emit("Expand", [o.x[0], o.shape_tensor(target)])


def _slice_node(o, x, dim, start, end, step=1):
    return o.emit("Slice", [x, o.const([start]), o.const([end]), o.const([dim]), o.const([step])])


def _slice(o):
    src = o.in_shape(0)
    dim = o.dim(o.attr("dim"), len(src))
    start = o.attr("start") or 0
    ends = o.values(lambda op: op["attrs"].get("end"))
    sizes = [job["descs"][o.op["inputs"][0]]["shape"][dim] for job in o.ex.jobs]
    if any(e != ends[0] for e in ends) and all(e is not None and e >= n for e, n in zip(ends, sizes)):
        end = _INT64_MAX  # the end follows the dim's size (x[:, :n] with n the size): to the end
    else:
        end = o.attr("end")
        end = _INT64_MAX if end is None else end
    return _slice_node(o, o.x[0], dim, start, end, o.attr("step"))


def _narrow(o):
    dim = o.dim(o.attr("dim"), len(o.in_shape(0)))
    start = o.attr("start")
    if start < 0:
        o.fail("a negative start has no ONNX mapping yet")
    return _slice_node(o, o.x[0], dim, start, start + o.attr("length"))


def _select(o):
    return o.emit("Gather", [o.x[0], o.const(o.attr("index"))], axis=o.attr("dim"))


def _unsqueeze(o):
    return o.emit("Unsqueeze", [o.x[0], o.const([o.dim(o.attr("dim"), len(o.in_shape(0)) + 1)])])


def _squeeze(o):
    src = o.in_shape(0)
    dims = o.attr("dim")
    dims = range(len(src)) if dims is None else [o.dim(d, len(src)) for d in dims]
    axes = [d for d in dims if src[d].static() and src[d].base == 1]
    return o.emit("Squeeze", [o.x[0], o.const(axes)]) if axes else o.emit("Identity", o.x)


def _restride(o):
    # Note [Exporting a traced job]: restride reads memory; ONNX has values, so only a contiguous root maps.
    root = o.ex.descs[o.op["inputs"][0]]
    size, stride, offset = o.attr("size"), o.attr("stride"), o.attr("offset")
    numel = int(np.prod(size))
    if root["strides"] != _contiguous(root["shape"]):
        o.fail("it reads a non-contiguous tensor's memory, which has no ONNX mapping; make the tensor "
               "contiguous() before the view")
    if stride == _contiguous(size) and offset + numel <= int(np.prod(root["shape"])):
        flat = o.emit("Reshape", [o.x[0], o.const([-1])])
        part = _slice_node(o, flat, 0, offset, offset + numel)
        return o.emit("Reshape", [part, o.const(size)])
    if len(size) == len(root["shape"]):
        rs = _contiguous(root["shape"])
        steps = [st // r if r and st % r == 0 else 0 for st, r in zip(stride, rs)]
        starts = [(offset // r) % n for r, n in zip(rs, root["shape"])]
        if all(steps) and sum(s * r for s, r in zip(starts, rs)) == offset and \
                all(b + (n - 1) * st < m for b, n, st, m in zip(starts, size, steps, root["shape"])):
            ends = [b + (n - 1) * st + 1 for b, n, st in zip(starts, size, steps)]
            return o.emit("Slice", [o.x[0], o.const(starts), o.const(ends), o.const(list(range(len(size)))),
                                    o.const(steps)])
    o.fail(f"restride to size {size}, stride {stride}, offset {offset} is neither a reshape nor a slice of its "
           "root and has no ONNX mapping; build the view with view/reshape/slicing ops")


def _sdpa(o):
    # The fused attention op (out, lse, probs): softmax(q k^T scale + mask) v in plain nodes; only out is exported.
    q, k, v = o.x[:3]
    dt = o.out_dtype()
    rank = len(o.in_shape(1))
    key_t = o.emit("Transpose", [k], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = o.emit("MatMul", [o.emit("Mul", [q, o.const(o.attr("scale"), dt)]), key_t])
    minus_inf = o.const(-np.inf, dt)
    if o.attr("is_causal"):
        ones = o.emit("ConstantOfShape", [o.emit("Shape", [scores])],
                      value=o.ex.numpy_helper.from_array(np.ones(1, dtype=np.dtype(dt))))
        keep = o.emit("Cast", [o.emit("Trilu", [ones], upper=0)], to=_onnx_type("bool"))
        scores = o.emit("Where", [keep, scores, minus_inf])
    if len(o.x) > 3:
        mask = o.x[3]
        scores = (o.emit("Where", [mask, scores, minus_inf]) if o.in_dtype(3) == "bool"
                  else o.emit("Add", [scores, o.cast(mask, o.in_dtype(3), dt)]))
    return [o.emit("MatMul", [o.emit("Softmax", [scores], axis=-1), v]), None, None]


def _softmax(onnx_op):
    return lambda o: o.emit(onnx_op, o.x, axis=o.attr("dim"))


def _activation(onnx_op, **names):
    return lambda o: o.emit(onnx_op, o.x, **{k: float(o.scalar(i)) for i, k in enumerate(names)})


def _clamp_scalar(o):
    dt = o.out_dtype()
    lo = "" if o.scalar(0) is None else o.const(o.scalar(0), dt)
    hi = "" if o.scalar(1) is None else o.const(o.scalar(1), dt)
    return o.emit("Clip", [o.x[0], lo, hi])


_UNARY = {"neg": "Neg", "abs": "Abs", "relu": "Relu", "sign": "Sign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "sigmoid": "Sigmoid", "tanh": "Tanh", "sin": "Sin", "cos": "Cos", "erf": "Erf", "floor": "Floor",
          "ceil": "Ceil", "round": "Round", "reciprocal": "Reciprocal", "logical_not": "Not"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "eq": "Equal", "ne": "NotEqual", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
           "ge": "GreaterOrEqual"}

_OPS = {
    "_sdpa": _sdpa,
    **{k: _elementwise(v) for k, v in _UNARY.items()},
    **{k: _elementwise(v) for k, v in _BINARY.items()},
    **{k + "_scalar": _elementwise(v, "right") for k, v in _BINARY.items()},
    **{"r" + k + "_scalar": _elementwise(v, "left") for k, v in _BINARY.items() if v not in _COMPARE},
    "rsqrt": lambda o: o.emit("Reciprocal", [o.emit("Sqrt", o.inputs_as(o.out_dtype()))]),
    "silu": lambda o: o.emit("Mul", [o.x[0], o.emit("Sigmoid", o.x)]),
    "gelu": _gelu,
    "leaky_relu": _activation("LeakyRelu", alpha=0),
    "elu": _activation("Elu", alpha=0),
    "clamp_scalar": _clamp_scalar,
    "where": lambda o: o.emit("Where", [o.x[0]] + [o.cast(x, o.in_dtype(i + 1), o.out_dtype())
                                                   for i, x in enumerate(o.x[1:])]),
    "cast": lambda o: o.emit("Cast", o.x, to=_onnx_type(o.attr("dtype"))),
    "matmul": lambda o: o.emit("MatMul", o.inputs_as(o.out_dtype())),
    "linear": _linear,
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "max_pool2d_with_workspace": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "layer_norm": _layer_norm,
    "sum": _reduce("ReduceSum"),
    "mean": _reduce("ReduceMean"),
    "amax": _reduce("ReduceMax"),
    "amin": _reduce("ReduceMin"),
    "cat": lambda o: o.emit("Concat", o.inputs_as(o.out_dtype()), axis=o.attr("dim")),
    "embedding": lambda o: o.emit("Gather", o.x, axis=0),
    "view": _view,
    "transpose": _transpose,
    "t": _transpose,
    "permute": _transpose,
    "expand": _expand,
    "slice": _slice,
    "narrow": _narrow,
    "select": _select,
    "unsqueeze": _unsqueeze,
    "squeeze": _squeeze,
    "restride": _restride,
}


# --- tracing ------------------------------------------------------------------------------------------------
def _tensors(obj, what):
    if isinstance(obj, rill.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)) and all(isinstance(t, rill.Tensor) for t in obj):
        return list(obj)
    raise TypeError(f"[onnx.export] {what} must be a tensor or a tuple of tensors, got {type(obj).__name__}")


def _trace(model, inputs):
    """The job of model(*inputs) as Python data (ops by name, blob descs) and the eager tensors it binds."""
    tracer = _C._GraphTracer(type(model).__name__)
    if isinstance(model, rill.nn.Module):
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            tracer.name_variable(t, name)
    for t in inputs:
        tracer.add_input(t)
    try:
        tracer.start()
        outputs = _tensors(model(*inputs), "the model's result")
        for t in outputs:
            tracer.add_output(t)
        job = tracer.finish_job()
    finally:
        tracer.stop()
    ops = {op["name"]: op for op in job["ops"]}
    descs = {lbn: d for op in job["ops"] for lbn, d in zip(op["outputs"], op["output_descs"])}
    return {"ops": ops, "order": [op["name"] for op in job["ops"]], "descs": descs}, tracer.variables()


def _needed(job):
    """The ops the outputs depend on, in job order (a dead op need not map)."""
    producer = {lbn: op["name"] for op in job["ops"].values() for lbn in op["outputs"]}
    stack = [n for n in job["order"] if job["ops"][n]["op_type"] == "output"]
    seen = set(stack)
    while stack:
        for lbn in job["ops"][stack.pop()]["inputs"]:
            if producer[lbn] not in seen:
                seen.add(producer[lbn])
                stack.append(producer[lbn])
    return [n for n in job["order"] if n in seen]


class _Exporter:
    """Builds the ONNX graph of jobs[0]; jobs[1:] are its traces with one dynamic axis grown each."""

    def __init__(self, jobs, variables, axes, opset, axis_source, axis_base):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.jobs, self.variables, self.axes, self.opset = jobs, variables, axes, opset
        self.descs = jobs[0]["descs"]
        self.names, self.nodes, self.initializers, self.count = {}, [], [], 0
        self.axis_source = axis_source  # dynamic axis -> (ONNX input name, dim) that carries it
        self.axis_base = axis_base  # dynamic axis -> its traced size
        self._dim_cache = {}

    def shape(self, lbn):
        shapes = [job["descs"][lbn]["shape"] for job in self.jobs]
        return [_Dim(shapes[0][d], {a: (s[d] - shapes[0][d]) // _DELTA for a, s in zip(self.axes, shapes[1:])
                                    if s[d] != shapes[0][d]}) for d in range(len(shapes[0]))]

    def fresh(self):
        self.count += 1
        return f"t{self.count}"

    def emit(self, op_type, inputs, n_outputs=1, **attrs):
        outs = [self.fresh() for _ in range(n_outputs)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_outputs == 1 else outs

    def const(self, array):
        name = self.fresh()
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def dim_expr(self, o, d):
        """A [1] int64 tensor computing d (coef * size + base0 of one dynamic axis) from that axis' input."""
        (axis, coef), = d.coefs.items()
        key = (axis, coef, d.base)
        if key not in self._dim_cache:
            name, dim = self.axis_source[axis]
            size = o.emit("Gather", [o.emit("Shape", [name]), o.const([dim])], axis=0)
            value = size if coef == 1 else o.emit("Mul", [size, o.const([coef])])
            base0 = d.base - coef * self.axis_base[axis]
            self._dim_cache[key] = value if base0 == 0 else o.emit("Add", [value, o.const([base0])])
        return self._dim_cache[key]

    def value_info(self, name, lbn, dim_names):
        shape = self.shape(lbn)
        dims = [dim_names.get(i) or (d.base if d.static() else self.axis_name(d) or f"{name}_dim{i}")
                for i, d in enumerate(shape)]
        return self.helper.make_tensor_value_info(name, _onnx_type(self.descs[lbn]["dtype"]), dims)

    def axis_name(self, d):
        """The dynamic axis d is, when it is one exactly."""
        (axis, coef), = d.coefs.items() if len(d.coefs) == 1 else ((None, 0),)
        return axis if coef == 1 and d.base == self.axis_base[axis] else None

    def build(self, input_names, output_names, dynamic_axes, export_params):
        job, inputs, outputs = self.jobs[0], [], []
        for name in _needed(job):
            op = job["ops"][name]
            kind = op["op_type"]
            if kind == "input":
                lbn, onnx_name = op["outputs"][0], input_names[op["attrs"]["index"]]
                self.names[lbn] = onnx_name
                inputs.append(self.value_info(onnx_name, lbn, dynamic_axes.get(onnx_name, {})))
            elif kind == "variable":
                self.names[op["outputs"][0]] = name
                value = self.variables[op["attrs"]["index"]].detach().numpy()
                if export_params:
                    self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
                else:
                    inputs.append(self.value_info(name, op["outputs"][0], {}))
            elif kind == "output":
                onnx_name = output_names[op["attrs"]["index"]]
                self.emit_named("Identity", [self.names[op["inputs"][0]]], onnx_name)
                outputs.append(self.value_info(onnx_name, op["inputs"][0], dynamic_axes.get(onnx_name, {})))
            else:
                self.map_op(op)
        return self.helper.make_graph(self.nodes, job.get("name", "rill"), inputs, outputs, self.initializers)

    def emit_named(self, op_type, inputs, output):
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=output))

    def map_op(self, op):
        o = _Op(self, op)
        build = _OPS.get(op["op_type"])
        if build is None:
            raise RuntimeError(f"[onnx.export] {o.where()} has no ONNX mapping yet; rill.onnx maps "
                               f"{', '.join(sorted(_OPS))}. Rewrite the model with those ops or export it "
                               "from PyTorch")
        outs = build(o)
        outs = [outs] if isinstance(outs, str) else outs
        for lbn, name in zip(op["outputs"], outs):
            if name is not None:
                self.names[lbn] = name


def export(model, args, f, export_params=True, *, input_names=None, output_names=None, dynamic_axes=None,
           opset_version=None, **kwargs):
    """Write model(*args), traced in eval mode, to f (a path or a binary file object) as ONNX.

    input_names/output_names name the graph's inputs and outputs (input_0.../output_0... by default);
    dynamic_axes ({name: {dim: "axis name"}} or {name: [dims]}) makes those dims symbolic; opset_version
    defaults to 17."""
    import onnx
    unknown = set(kwargs) - _SUPPORTED_KWARGS
    if unknown:
        raise TypeError(f"[onnx.export] unsupported arguments: {', '.join(sorted(unknown))}")
    opset = 17 if opset_version is None else opset_version
    if not 17 <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(f"[onnx.export] opset_version must be in [17, {onnx.defs.onnx_opset_version()}], got {opset}")
    args = _tensors(args, "args")
    with rill.no_grad():
        inputs = [t.detach().clone() for t in args]
    input_names = _names(input_names, len(inputs), "input")
    axes = _dynamic_axes(dynamic_axes or {}, input_names, inputs)
    modules = list(model.modules()) if isinstance(model, rill.nn.Module) else []
    training = [m.training for m in modules]
    try:
        for m in modules:
            m.training = False
        with rill.no_grad():
            base, variables = _trace(model, inputs)
            jobs = [base]
            for axis, places in axes.items():
                jobs.append(_trace(model, _grown(inputs, places))[0])
    finally:
        for m, t in zip(modules, training):
            m.training = t
    for axis, job in zip(axes, jobs[1:]):
        if job["order"] != base["order"] or any(job["ops"][n]["op_type"] != base["ops"][n]["op_type"]
                                                for n in base["order"]):
            raise RuntimeError(f"[onnx.export] the model traces different ops when dynamic axis '{axis}' changes "
                               "size; export it without that dynamic axis")
    n_outputs = sum(op["op_type"] == "output" for op in base["ops"].values())
    output_names = _names(output_names, n_outputs, "output")
    ex = _Exporter(jobs, variables, list(axes), opset, {a: (input_names[p[0][0]], p[0][1]) for a, p in axes.items()},
                   {a: inputs[p[0][0]].shape[p[0][1]] for a, p in axes.items()})
    named = {k: _dim_names(k, v) for k, v in (dynamic_axes or {}).items()}
    graph = ex.build(input_names, output_names, named, export_params)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="rill")
    onnx.checker.check_model(proto)
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())


def _names(names, n, kind):
    names = list(names or [])
    if len(names) > n:
        raise ValueError(f"[onnx.export] {len(names)} {kind}_names for {n} {kind}s")
    return names + [f"{kind}_{i}" for i in range(len(names), n)]


def _dim_names(key, dims):
    return dict(dims) if isinstance(dims, dict) else {d: f"{key}_dynamic_axes_{i + 1}" for i, d in enumerate(dims)}


def _dynamic_axes(dynamic_axes, input_names, inputs):
    """Each dynamic axis of the inputs -> the (input, dim) places it names."""
    axes = {}
    for key, dims in dynamic_axes.items():
        if key not in input_names:
            continue
        i = input_names.index(key)
        for d, axis in _dim_names(key, dims).items():
            if not 0 <= d < inputs[i].ndim:
                raise ValueError(f"[onnx.export] dynamic_axes['{key}'] names dim {d}, but the input has "
                                 f"{inputs[i].ndim} dims")
            axes.setdefault(axis, []).append((i, d))
    return axes


def _grown(inputs, places):
    out = list(inputs)
    for i, d in places:
        shape = list(out[i].shape)
        shape[d] += _DELTA
        out[i] = rill.zeros(shape, dtype=inputs[i].dtype)
    return out
