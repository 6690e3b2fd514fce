#include "rill/eager/functional.h"

#include <cmath>
#include <limits>
#include <utility>

#include "rill/eager/autocast.h"
#include "rill/eager/grad_mode.h"
#include "rill/eager/trace.h"
#include "rill/kernels/registry.h"
#include "rill/ops/type_promotion.h"
#include "rill/ops/view.h"
#include "rill/vm/virtual_machine.h"

namespace rill::eager {
namespace {

// Inputs converted to the dtypes inference asks for. Returns inputs itself when no conversion is needed.
std::span<const Tensor> convert_inputs(std::span<const Tensor> inputs, const InferResult& r,
                                       std::vector<Tensor>& storage) {
  if (r.input_dtypes.empty()) return inputs;
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) any |= inputs[i].dtype() != r.input_dtypes[i];
  if (!any) return inputs;
  GradModeGuard off(false);  // the call is recorded on its own inputs, not on the conversions
  storage.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) storage.push_back(to_dtype(inputs[i], r.input_dtypes[i]));
  return storage;
}

void check_arity(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars) {
  RILL_ASSERT(op.num_inputs < 0 || static_cast<size_t>(op.num_inputs) == inputs.size(), "[", op.name,
              "] wrong number of inputs");
  RILL_ASSERT(static_cast<size_t>(op.num_scalars) == scalars.size(), "[", op.name, "] wrong number of scalars");
  for (const Tensor& t : inputs) RILL_CHECK(t.defined(), Value, "[", op.name, "] got an undefined tensor");
}

const InferResult& infer(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                         AttrsSym attrs) {
  constexpr size_t kInline = 8;
  MetaSym buf[kInline];
  std::vector<MetaSym> heap;
  MetaSym* metas = buf;
  if (inputs.size() > kInline) {
    heap.resize(inputs.size());
    metas = heap.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) metas[i] = inputs[i].meta();
  return ops::infer_cached(op, {metas, inputs.size()}, scalars, attrs);
}

thread_local TraceSink* t_trace_sink = nullptr;
thread_local int32_t t_trace_stage = 0;  // Note [Stages of a trace] in trace.h
thread_local int64_t t_trace_last_op = 0;
thread_local int64_t t_trace_grad_of = 0;

// Submit the call, or hand it to the trace sink (Note [Tracing] in trace.h).
void submit(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
            std::span<const Tensor> outputs) {
  if (t_trace_sink) [[unlikely]] {
    t_trace_sink->on_call(op, inputs, scalars, attrs, outputs);
    return;
  }
  vm::Stream stream;
  stream.thread_id = static_cast<int16_t>(vm::current_thread_id());
  submit_on(op, inputs, scalars, attrs, outputs, stream);
}

// An in-place write into inputs[0]: write() then a version bump, offered to the recorder first when grad mode
// is on (Note [Recording] in grad_mode.h), which checks it, records it and calls it.
template <typename Write>
void recorded_write(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                    AttrsSym attrs, const Write& write) {
  auto run = [&] {
    write();
    inputs[0].storage()->bump_version();
  };
  using Run = decltype(run);
  if (grad_enabled() && recorder())
    recorder()->record_inplace(op, inputs, scalars, attrs, [](void* r) { (*static_cast<Run*>(r))(); }, &run);
  else
    run();
}

}  // namespace

TraceSink* trace_sink() { return t_trace_sink; }

int32_t trace_stage() { return t_trace_stage; }

int32_t set_trace_stage(int32_t stage) { return std::exchange(t_trace_stage, stage); }

int64_t trace_last_op() { return t_trace_last_op; }

void set_trace_last_op(int64_t op) { t_trace_last_op = op; }

int64_t trace_grad_of() { return t_trace_grad_of; }

int64_t set_trace_grad_of(int64_t op) { return std::exchange(t_trace_grad_of, op); }

TraceSink* set_trace_sink(TraceSink* sink) {
  TraceSink* previous = t_trace_sink;
  t_trace_sink = sink;
  return previous;
}

void submit_on(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
               std::span<const Tensor> outputs, vm::Stream stream) {
  RILL_CHECK(!t_trace_sink, Runtime, "[", op.name, "] cannot run inside nn.Graph.build: a graph does not record ",
             "collectives or other ops on their own streams yet; call it outside build()");
  const Device device = !outputs.empty() ? outputs[0].device() : inputs.empty() ? Device{} : inputs[0].device();
  KernelFn kernel = op.kernel(device.type);
  if (kernel == nullptr) [[unlikely]] {
    RILL_CHECK(device.type == DeviceType::kCPU, Runtime, "[", op.name, "] has no kernel for ", device.str(),
               ": this build of rill has CPU kernels only");
    RILL_FAIL(NotImplemented, "[", op.name, "] has no CPU kernel");
  }
  auto instr = vm::new_instruction();
  instr->op = &op;
  instr->kernel = kernel;
  instr->inputs.assign(inputs.begin(), inputs.end());
  instr->outputs.assign(outputs.begin(), outputs.end());
  instr->attrs = attrs;
  instr->scalars.assign(scalars.begin(), scalars.end());
  instr->location = vm::capture_location();
  instr->stream = stream;
  bool shared = false;
  for (const Tensor& t : instr->inputs) shared |= t.storage()->shared();
  for (const Tensor& t : instr->outputs) shared |= t.storage()->shared();
  if (!shared) {
    vm::submit(std::move(instr));
    return;
  }
  // Note [Shared memory is synchronous]
  // Memory that numpy, a DLPack consumer or a raw pointer can also reach is read
  // and written by code the VM does not order. An op touching it therefore
  // finishes before it returns, as in PyTorch: `t = rill.from_numpy(a); t[0] = 1`
  // is visible in `a` at once, and `y = t + 1; a[0] = 5` leaves y alone. Errors
  // of such ops are raised here too.
  std::vector<Tensor> written = instr->outputs;
  vm::submit(std::move(instr));
  for (const Tensor& t : written) vm::wait_readable(t);
}

const OpSchema& op(std::string_view name) {
  kernels::register_all();
  return ops::get(name);
}

std::vector<Tensor> call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                         AttrsSym attrs) {
  check_arity(op, inputs, scalars);
  if (op.composite()) [[unlikely]]
    return composite_call(op, inputs, attrs);
  std::vector<Tensor> autocast;
  if (autocast_state().enabled) [[unlikely]]
    inputs = autocast_inputs(op, inputs, autocast);  // Note [Autocast]
  const InferResult& r = infer(op, inputs, scalars, attrs);
  std::vector<Tensor> converted;
  std::span<const Tensor> args = convert_inputs(inputs, r, converted);
  std::vector<Tensor> outputs;
  outputs.reserve(r.outputs.size());
  for (const MetaSym& m : r.outputs) outputs.push_back(Tensor::empty(m));
  submit(op, args, scalars, attrs, outputs);
  if (should_record(inputs)) [[unlikely]]
    recorder()->record(op, inputs, scalars, attrs, outputs);
  return outputs;
}

Tensor call1(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs) {
  check_arity(op, inputs, scalars);
  if (op.composite()) [[unlikely]]
    return std::move(composite_call(op, inputs, attrs)[0]);
  std::vector<Tensor> autocast;
  if (autocast_state().enabled) [[unlikely]]
    inputs = autocast_inputs(op, inputs, autocast);  // Note [Autocast]
  const InferResult& r = infer(op, inputs, scalars, attrs);
  RILL_ASSERT(r.outputs.size() == 1, "[", op.name, "] call1 on an op with ", r.outputs.size(), " outputs");
  std::vector<Tensor> converted;
  std::span<const Tensor> args = convert_inputs(inputs, r, converted);
  Tensor out = Tensor::empty(r.outputs[0]);
  submit(op, args, scalars, attrs, {&out, 1});
  if (should_record(inputs)) [[unlikely]]
    recorder()->record(op, inputs, scalars, attrs, {&out, 1});
  return out;
}

// A composite op's forward: its function in the functional API (Note [Composite ops] in ops/reduce.cpp).
std::vector<Tensor> composite_call(const OpSchema& op, std::span<const Tensor> inputs, AttrsSym attrs) {
  static const OpSchema& lse = eager::op("logsumexp");
  static const OpSchema& norm_op = eager::op("norm");
  static const OpSchema& argsort = eager::op("argsort");
  static const OpSchema& argsort_stable = eager::op("argsort_stable");
  static const OpSchema& topk_op = eager::op("topk");
  RILL_ASSERT(inputs.size() == 1, "[", op.name, "] a composite op of one input");
  const Tensor& x = inputs[0];
  auto attr = [&]<typename T>(const char* name, T) { return attr_of<T>(op, *attrs, name); };
  if (&op == &lse || &op == &norm_op) {
    const auto dims = attr("dim", std::vector<int64_t>{});
    const bool keepdim = attr("keepdim", false);
    if (&op == &lse) return {logsumexp(x, dims, keepdim)};
    return {norm(x, attr("ord", 0.0), dims, keepdim)};
  }
  const int64_t dim = attr("dim", int64_t{0});
  if (&op == &argsort || &op == &argsort_stable) {
    const bool stable = &op == &argsort_stable && attr("stable", false);
    return {sort(x, dim, attr("descending", false), stable).second};
  }
  const int64_t k = attr("k", int64_t{0});
  auto [values, indices] = &op == &topk_op ? topk(x, k, dim, attr("largest", false), attr("sorted", false))
                                           : kthvalue(x, k, dim, attr("keepdim", false));
  return {values, indices};
}

void record_composite(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                      AttrsSym attrs, std::span<const Tensor> outputs) {
  if (should_record(inputs)) recorder()->record(op, inputs, scalars, attrs, outputs);
}

const Tensor& inplace(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                      AttrsSym attrs) {
  recorded_write(op, inputs, scalars, attrs, [&] { call_into(op, inputs, scalars, attrs, inputs[0]); });
  return inputs[0];
}

void update_in_place(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                     AttrsSym attrs) {
  RILL_ASSERT(op.flags.updates_in_place, "[", op.name, "] update_in_place on an op that does not update in place");
  check_arity(op, inputs, scalars);
  const InferResult& r = infer(op, inputs, scalars, attrs);
  const int n = static_cast<int>(inputs.size());
  std::vector<Tensor> targets;
  targets.reserve(r.outputs.size());
  bool direct = !t_trace_sink && r.input_dtypes.empty();
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const int j = ops::updated_input(op, static_cast<int>(k), n);
    RILL_ASSERT(j >= 0, "[", op.name, "] output ", k, " updates no input");
    const Tensor& t = inputs[static_cast<size_t>(j)];
    RILL_CHECK(!grad_enabled() || !t.impl()->requires_grad(), Runtime, "[", op.name, "_] a tensor that requires "
               "grad is updated in place; call it under rill.no_grad(), as optimizer.step() does");
    const TensorMeta& m = *r.outputs[k];
    direct &= t.is_contiguous() && t.dtype() == m.dtype && t.shape() == m.shape;
    for (int i = 0; i < n; ++i)  // a written tensor shares memory with no other operand
      direct &= i == j || inputs[static_cast<size_t>(i)].storage() != t.storage();
    targets.push_back(t);
  }
  if (direct) {
    submit(op, inputs, scalars, attrs, targets);
    for (const Tensor& t : targets) t.storage()->bump_version();
    return;
  }
  GradModeGuard off(false);
  std::vector<Tensor> results = call(op, inputs, scalars, attrs);
  for (size_t k = 0; k < targets.size(); ++k) copy_(targets[k], results[k]);  // recorded copies bump versions
}

void call_into(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
               const Tensor& out) {
  check_arity(op, inputs, scalars);
  const InferResult& r = infer(op, inputs, scalars, attrs);
  RILL_ASSERT(r.outputs.size() == 1, "[", op.name, "] call_into on an op with ", r.outputs.size(), " outputs");
  const TensorMeta& m = *r.outputs[0];
  RILL_CHECK(m.shape == out.shape(), Runtime, "[", op.name, "] output with shape ", shape_str(out.shape()),
             " doesn't match the broadcast shape ", shape_str(m.shape));
  RILL_CHECK(dtype_can_cast(m.dtype, out.dtype()), Runtime, "[", op.name, "] result type ", dtype_name(m.dtype),
             " can't be cast to the desired output type ", dtype_name(out.dtype()));
  if (m.dtype != out.dtype()) check_strict_store(op.name, m.dtype, out.dtype());
  if (m.dtype == out.dtype() && (op.strided_output() || out.is_contiguous()) && !op.composite()) {
    std::vector<Tensor> converted;
    std::span<const Tensor> args = convert_inputs(inputs, r, converted);
    if (t_trace_sink) [[unlikely]]
      t_trace_sink->on_write(op, args, scalars, attrs, out);
    else
      submit(op, args, scalars, attrs, {&out, 1});
    return;
  }
  // Compute densely in the op's dtype, then convert into out.
  GradModeGuard off(false);  // a write: what records it is the caller (inplace(), copy_)
  Tensor tmp = call1(op, inputs, scalars, attrs);
  write_into(out, tmp);
}

// --- conversions and copies ---------------------------------------------------------------

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  static const OpSchema& cast = op("cast");
  return call1(cast, {&x, 1}, {}, make_attrs({dtype}));
}

Tensor clone(const Tensor& x) {
  static const OpSchema& cast = op("cast");
  return call1(cast, {&x, 1}, {}, make_attrs({x.dtype()}));
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

void write_into(const Tensor& dst, const Tensor& src) {
  static const OpSchema& cast = op("cast");
  GradModeGuard off(false);
  Tensor s = src.shape() == dst.shape() ? src : expand(src, dst.shape());
  call_into(cast, {&s, 1}, {}, make_attrs({dst.dtype()}), dst);
}

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  static const OpSchema& copy = op("copy_");
  Tensor in[2] = {dst, src};
  recorded_write(copy, in, {}, empty_attrs(), [&] { write_into(dst, src); });
  return dst;
}

namespace {

// Note [Scalar range check]
// A number written into a tensor (fill_, zero_, full, x[i] = v) must fit the dtype, as PyTorch's
// checked_convert requires: an out-of-range float -> int conversion is undefined behaviour in C++, and a
// silently wrapped value is a wrong answer. As in PyTorch, a negative int may wrap into an unsigned dtype
// (uint8: -3 -> 253), infinities and NaN fit floating dtypes (NaN no integer one), and bool takes anything.
bool scalar_overflows(Scalar v, DType t) {
  if (t == DType::kBool || v.kind() == Scalar::Kind::kBool) return false;
  if (dtype_is_floating(t)) {
    double max = t == DType::kFloat16    ? 65504.0
                 : t == DType::kBFloat16 ? 3.3895313892515355e38
                 : t == DType::kFloat32  ? static_cast<double>(std::numeric_limits<float>::max())
                                         : std::numeric_limits<double>::max();
    double d = v.to_double();
    return std::isfinite(d) && std::abs(d) > max;
  }
  int64_t lo = 0, hi = 0;
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      lo = static_cast<int64_t>(std::numeric_limits<T>::lowest());
      hi = static_cast<int64_t>(std::numeric_limits<T>::max());
    }
  });
  if (v.is_floating()) {
    double d = v.to_double();
    // int64's max rounds up to 2^63 as a double, which itself doesn't fit (PyTorch lets it through).
    return !std::isfinite(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi) || d >= 0x1p63;
  }
  int64_t i = v.to_int();
  if (lo == 0) return i > hi || i < -hi;
  return i < lo || i > hi;
}

}  // namespace

void write_fill(const Tensor& dst, Scalar value) {
  static const OpSchema& fill = op("fill");
  if (scalar_overflows(value, dst.dtype())) {
    if (value.is_floating())
      RILL_FAIL(Runtime, "[fill] value ", value.to_double(), " cannot be converted to type ", dtype_name(dst.dtype()),
                " without overflow");
    RILL_FAIL(Runtime, "[fill] value ", value.to_int(), " cannot be converted to type ", dtype_name(dst.dtype()),
              " without overflow");
  }
  Scalar v[1] = {value};
  call_into(fill, {}, v, make_attrs({dst.shape(), dst.dtype()}), dst);
}

const Tensor& fill_(const Tensor& dst, Scalar value) {
  static const OpSchema& fill = op("fill_");
  Scalar v[1] = {value};
  recorded_write(fill, {&dst, 1}, v, empty_attrs(), [&] { write_fill(dst, value); });
  return dst;
}

// --- views ------------------------------------------------------------------------------

Tensor view_call(const OpSchema& op, const Tensor& x, AttrsSym attrs) {
  RILL_ASSERT(op.flags.view, "[", op.name, "] is not a view op");
  RILL_CHECK(x.defined(), Value, "[", op.name, "] got an undefined tensor");
  MetaSym in[1] = {x.meta()};
  const InferResult& r = ops::infer_cached(op, in, {}, attrs);
  Tensor y = x.view_as_meta(r.outputs[0], x.offset() + r.view_offset);
  if (t_trace_sink) [[unlikely]]
    t_trace_sink->on_view(op, x, attrs, y);
  if (grad_enabled() && recorder()) [[unlikely]]
    recorder()->record_view(op, x, attrs, y);
  return y;
}

Tensor view(const Tensor& x, const Shape& shape) {
  static const OpSchema& op = eager::op("view");
  return view_call(op, x, make_attrs({shape}));
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  if (view::view(*x.meta(), shape)) return view(x, shape);
  return view(clone(x), shape);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  static const OpSchema& op = eager::op("transpose");
  return view_call(op, x, make_attrs({d0, d1}));
}
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  static const OpSchema& op = eager::op("permute");
  return view_call(op, x, make_attrs({dims}));
}
Tensor expand(const Tensor& x, const Shape& sizes) {
  static const OpSchema& op = eager::op("expand");
  return view_call(op, x, make_attrs({sizes}));
}
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  static const OpSchema& op = eager::op("slice");
  auto opt = [](std::optional<int64_t> v) { return v ? AttrValue(*v) : AttrValue(std::monostate{}); };
  std::vector<AttrValue> attrs;  // one by one: a braced list of variants trips GCC 12's -Wmaybe-uninitialized
  attrs.reserve(4);
  attrs.emplace_back(dim);
  attrs.push_back(opt(start));
  attrs.push_back(opt(stop));
  attrs.emplace_back(step);
  return view_call(op, x, make_attrs(std::move(attrs)));
}
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  static const OpSchema& op = eager::op("narrow");
  return view_call(op, x, make_attrs({dim, start, length}));
}
Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  static const OpSchema& op = eager::op("select");
  return view_call(op, x, make_attrs({dim, index}));
}
Tensor unsqueeze(const Tensor& x, int64_t dim) {
  static const OpSchema& op = eager::op("unsqueeze");
  return view_call(op, x, make_attrs({dim}));
}
Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims) {
  static const OpSchema& op = eager::op("squeeze");
  return view_call(op, x, make_attrs({dims ? AttrValue(std::move(*dims)) : AttrValue(std::monostate{})}));
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  int64_t n = x.ndim();
  start_dim = normalize_dim(start_dim, n, "flatten");
  end_dim = normalize_dim(end_dim, n, "flatten");
  RILL_CHECK(start_dim <= end_dim, Runtime, "[flatten] start_dim (", start_dim, ") cannot come after end_dim (",
             end_dim, ")");
  if (n == 0) return reshape(x, {1});
  if (start_dim == end_dim) return x;  // as in PyTorch: x itself, strides untouched
  Shape s(x.shape().begin(), x.shape().begin() + start_dim);
  int64_t mid = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) mid *= x.shape()[d];
  s.push_back(mid);
  s.insert(s.end(), x.shape().begin() + end_dim + 1, x.shape().end());
  return reshape(x, s);
}

// --- math -------------------------------------------------------------------------------

Tensor unary(const OpSchema& op, const Tensor& x) { return call1(op, {&x, 1}); }

Tensor binary(const OpSchema& op, const Tensor& a, const Tensor& b) {
  Tensor in[2] = {a, b};
  return call1(op, in);
}

Tensor binary_scalar(const OpSchema& op, const Tensor& a, Scalar b) {
  // Known from the arguments alone, so raised here rather than when the kernel runs.
  static const OpSchema* pow_scalar = &eager::op("pow_scalar");
  RILL_CHECK(!(&op == pow_scalar && !dtype_is_floating(a.dtype()) && a.dtype() != DType::kBool &&
               !b.is_floating() && b.to_int() < 0),
             Runtime, "[pow] integers to negative integer powers are not allowed; convert the base to float first");
  Scalar s[1] = {b};
  return call1(op, {&a, 1}, s);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  static const OpSchema& w = op("where");
  Tensor in[3] = {cond, a, b};
  return call1(w, in);
}

void wait_readable(const Tensor& t) {
  if (t_trace_sink) [[unlikely]]
    t_trace_sink->on_sync(t, "an op whose output shape depends on tensor values (nonzero, unique, a boolean mask)");
  vm::wait_readable(t);
}

}  // namespace rill::eager
