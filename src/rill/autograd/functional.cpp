#include "rill/autograd/functional.h"

#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

bool any_floating(std::span<const Tensor> ts) {
  for (const Tensor& t : ts)
    if (dtype_is_floating(t.dtype())) return true;
  return false;
}

}  // namespace

bool should_record(std::span<const Tensor> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.impl()->requires_grad()) return true;
  return false;
}

void record(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
            std::span<const Tensor> outputs, const char* node_name) {
  if (!should_record(inputs) || !any_floating(outputs)) return;
  const GradRule* rule = find_rule(op.name);
  RILL_CHECK(rule != nullptr, NotImplemented, "[", op.name, "] has no gradient rule yet, so its result can't be "
             "differentiated; call it under rill.no_grad() or on detach()ed inputs");
  if (!rule->backward) return;
  std::vector<MetaSym> metas;
  metas.reserve(outputs.size());
  for (const Tensor& t : outputs) metas.push_back(t.meta());
  auto node = std::make_shared<OpNode>(*rule, inputs, scalars, attrs, std::move(metas));
  if (node_name) node->set_name(node_name);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (rule->saved_outputs & (1u << i)) node->save_output(i, outputs[i]);
    if (dtype_is_floating(outputs[i].dtype())) set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
}

std::vector<Tensor> call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                         AttrsSym attrs) {
  std::vector<Tensor> out = eager::call(op, inputs, scalars, attrs);
  record(op, inputs, scalars, attrs, out);
  return out;
}

Tensor call1(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs) {
  Tensor out = eager::call1(op, inputs, scalars, attrs);
  record(op, inputs, scalars, attrs, {&out, 1});
  return out;
}

// --- math -----------------------------------------------------------------------------------

Tensor unary(const OpSchema& op, const Tensor& x) {
  Tensor y = eager::unary(op, x);
  record(op, {&x, 1}, {}, empty_attrs(), {&y, 1});
  return y;
}

Tensor binary(const OpSchema& op, const Tensor& a, const Tensor& b) {
  Tensor y = eager::binary(op, a, b);
  Tensor in[2] = {a, b};
  record(op, in, {}, empty_attrs(), {&y, 1});
  return y;
}

Tensor binary_scalar(const OpSchema& op, const Tensor& a, Scalar b) {
  Tensor y = eager::binary_scalar(op, a, b);
  Scalar s[1] = {b};
  record(op, {&a, 1}, s, empty_attrs(), {&y, 1});
  return y;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  static const OpSchema& w = eager::op("where");
  Tensor y = eager::where(cond, a, b);
  Tensor in[3] = {cond, a, b};
  record(w, in, {}, empty_attrs(), {&y, 1});
  return y;
}

Tensor reduce(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
              std::optional<DType> dtype) {
  Tensor y = eager::reduce(op, x, dims, keepdim, dtype);
  if (!should_record({&x, 1})) return y;
  // The attrs as eager::reduce builds them (layouts in ops/reduce.cpp); rules read [dims, keepdim].
  const bool sum_like = op.name == "sum" || op.name == "mean" || op.name == "prod";
  AttrsSym attrs = sum_like ? make_attrs({dims, keepdim, dtype.value_or(DType::kFloat32), dtype.has_value()})
                            : make_attrs({dims, keepdim});
  const char* name = nullptr;
  if (dims.empty() && op.name == "sum") name = "SumBackward0";
  if (dims.empty() && op.name == "mean") name = "MeanBackward0";
  if (dims.empty() && op.name == "prod") name = "ProdBackward0";
  record(op, {&x, 1}, {}, attrs, {&y, 1}, name);
  return y;
}

std::pair<Tensor, Tensor> reduce_with_indices(const OpSchema& op, const Tensor& x, int64_t dim, bool keepdim) {
  auto [values, indices] = eager::reduce_with_indices(op, x, dim, keepdim);
  if (!should_record({&x, 1})) return {values, indices};
  static const OpSchema& max_dim = eager::op("max_dim");
  static const OpSchema& min_dim = eager::op("min_dim");
  const OpSchema& target = (op.name == "max" || op.name == "max_dim") ? max_dim : min_dim;
  Tensor out[2] = {values, indices};
  record(target, {&x, 1}, {}, make_attrs({dim, keepdim}), out);
  return {values, indices};
}

Tensor moment(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, double correction,
              bool keepdim) {
  Tensor y = eager::moment(op, x, dims, correction, keepdim);
  record(op, {&x, 1}, {}, make_attrs({dims, keepdim, correction}), {&y, 1});
  return y;
}

Tensor scan(const OpSchema& op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  Tensor y = eager::scan(op, x, dim, dtype);
  record(op, {&x, 1}, {}, make_attrs({dim, false, dtype.value_or(DType::kFloat32), dtype.has_value()}), {&y, 1});
  return y;
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpSchema& op = eager::op("logsumexp");
  Tensor y = eager::logsumexp(x, dims, keepdim);
  record(op, {&x, 1}, {}, make_attrs({dims, keepdim}), {&y, 1});
  return y;
}

Tensor norm(const Tensor& x, double ord, const std::vector<int64_t>& dims, bool keepdim,
            std::optional<DType> dtype) {
  static const OpSchema& op = eager::op("norm");
  Tensor in = dtype ? to_dtype(x, *dtype) : x;
  Tensor y = eager::norm(in, ord, dims, keepdim);
  record(op, {&in, 1}, {}, make_attrs({dims, keepdim, ord}), {&y, 1});
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor in[2] = {a, b};
  if (!should_record(in)) return eager::matmul(a, b);
  static const OpSchema& mm = eager::op("matmul");
  const int64_t da = a.ndim(), db = b.ndim();
  // The same checks as eager::matmul, which the recording path does not call.
  RILL_CHECK(da >= 1 && db >= 1, Runtime, "[matmul] both arguments to matmul need to be at least 1D, but they are ",
             da, "D and ", db, "D");
  if (da == 1 && db == 1)
    RILL_CHECK(a.shape()[0] == b.shape()[0], Runtime, "[matmul] inconsistent tensor size, expected tensor [",
               a.shape()[0], "] and src [", b.shape()[0], "] to have the same number of elements, but got ",
               a.shape()[0], " and ", b.shape()[0], " elements respectively");
  // 1-D operands become a row / a column through recorded views, as eager::matmul does without them.
  Tensor args[2] = {da == 1 ? unsqueeze(a, 0) : a, db == 1 ? unsqueeze(b, 1) : b};
  Tensor out = eager::call1(mm, args);
  record(mm, args, {}, empty_attrs(), {&out, 1}, da <= 2 && db <= 2 ? "MmBackward0" : "BmmBackward0");
  if (da == 1 && db == 1) return view(out, {});
  if (da == 1) return squeeze(out, std::vector<int64_t>{out.ndim() - 2});
  if (db == 1) return squeeze(out, std::vector<int64_t>{out.ndim() - 1});
  return out;
}

// --- conversions and in-place writes --------------------------------------------------------

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  static const OpSchema& cast = eager::op("cast");
  Tensor y = eager::to_dtype(x, dtype);
  record(cast, {&x, 1}, {}, make_attrs({dtype}), {&y, 1}, "ToCopyBackward0");
  return y;
}

Tensor clone(const Tensor& x) {
  static const OpSchema& cast = eager::op("cast");
  Tensor y = eager::clone(x);
  record(cast, {&x, 1}, {}, make_attrs({x.dtype()}), {&y, 1}, "CloneBackward0");
  return y;
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

Tensor detach(const Tensor& x) { return x.view_as_meta(x.meta(), x.offset()); }

void detach_(const Tensor& x) {
  AutogradMeta* m = find_meta(x);
  if (m) {
    RILL_CHECK(!m->view_base.defined() || !m->grad_fn, Runtime,
               "[detach_] Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
               "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, "
               "and hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
               "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
    m->grad_fn = nullptr;
    m->output_nr = 0;
  }
  x.impl()->set_requires_grad(false);
}

const Tensor& inplace(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                      AttrsSym attrs) {
  const Tensor& self = inputs[0];
  if (grad_enabled()) check_inplace(self);
  const GradRule* rule = nullptr;
  if (should_record(inputs) && dtype_is_floating(self.dtype())) {
    rule = find_rule(op.name);
    RILL_CHECK(rule != nullptr, NotImplemented, "[", op.name, "_] has no gradient rule yet, so it can't be used "
               "in place on a tensor that requires grad; call it under rill.no_grad()");
    if (!rule->backward) rule = nullptr;
  }
  if (!rule) {
    eager::call_into(op, inputs, scalars, attrs, self);
    self.storage()->bump_version();
    return self;
  }
  auto node = std::make_shared<OpNode>(*rule, inputs, scalars, attrs, std::vector<MetaSym>{self.meta()});
  // Saved inputs that share self's memory would be overwritten: save copies of them taken first.
  for (size_t i = 0; i < inputs.size(); ++i)
    if ((rule->saved_inputs & (1u << i)) && inputs[i].storage() == self.storage())
      node->save_input(i, eager::clone(inputs[i]));
  eager::call_into(op, inputs, scalars, attrs, self);
  self.storage()->bump_version();
  if (rule->saved_outputs & 1u) node->save_output(0, self);
  rebase_history(self, std::move(node));
  return self;
}

}  // namespace rill::autograd
