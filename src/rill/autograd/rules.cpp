#include "rill/autograd/rules.h"

#include "rill/eager/math.h"

#include <mutex>
#include <unordered_map>

namespace rill::autograd {
namespace {

std::unordered_map<const OpSchema*, GradRule>& rule_table() {
  static std::unordered_map<const OpSchema*, GradRule> table;
  return table;
}

}  // namespace

void define_rule(std::string_view op, GradRule rule) {
  auto [it, inserted] = rule_table().emplace(&eager::op(op), std::move(rule));
  RILL_ASSERT(inserted, "gradient rule for '", op, "' defined twice");
}

const GradRule* find_rule(const OpSchema& op) {
  static std::once_flag once;
  std::call_once(once, [] {
    register_elementwise_rules();
    register_special_rules();
    register_reduce_rules();
    register_matmul_rules();
    register_copy_rules();
    register_shape_rules();
    register_index_rules();
    register_sort_rules();
    register_nn_rules();
    register_view_rules();
    register_conv_rules();
    register_linalg_rules();
    register_experimental_rules();
    register_boxing_rules();
  });
  auto it = rule_table().find(&op);
  return it == rule_table().end() ? nullptr : &it->second;
}

// --- GradContext ----------------------------------------------------------------------------

namespace {

// Note [Gradients of gradients]: an alias of saved tensor t whose history is edge (or t itself when the
// backward records nothing, or t had none).
Tensor with_history(Tensor t, const Edge& edge) {
  if (!eager::grad_enabled() || !t.defined() || !edge.valid()) return t;
  Tensor alias = t.view_as_meta(t.meta(), t.offset());
  set_history(alias, edge.fn, edge.input_nr);
  return alias;
}

}  // namespace

Tensor GradContext::input(size_t i) const {
  RILL_ASSERT(node_.rule_.saved_inputs & (1u << i), "[", node_.name_, "] reads input ", i, " it did not save");
  return with_history(node_.saved_inputs_[i].unpack(node_), node_.next_edges()[i]);
}

Tensor GradContext::output(size_t i) const {
  RILL_ASSERT(node_.rule_.saved_outputs & (1u << i), "[", node_.name_, "] reads output ", i, " it did not save");
  Tensor t = node_.saved_outputs_[i].unpack(node_);
  if (!eager::grad_enabled()) return t;
  // the output's history is this node (shared: the engine holds it while it runs)
  return with_history(t, Edge{std::const_pointer_cast<Node>(node_.shared_from_this()), static_cast<uint32_t>(i)});
}

std::span<const Scalar> GradContext::scalars() const { return node_.scalars_; }
const OpSchema& GradContext::op() const { return node_.op_; }
AttrsSym GradContext::interned_attrs() const { return node_.attrs_; }
const Attrs& GradContext::attrs() const { return *node_.attrs_; }
const TensorMeta& GradContext::input_meta(size_t i) const { return *node_.input_metas_[i]; }
bool GradContext::needs_grad(size_t i) const { return every_input_ || node_.next_edges()[i].valid(); }
size_t GradContext::num_inputs() const { return node_.input_metas_.size(); }

// --- OpNode ---------------------------------------------------------------------------------

OpNode::OpNode(const OpSchema& op, const GradRule& rule, std::span<const Tensor> inputs,
               std::span<const Scalar> scalars, AttrsSym attrs, std::vector<MetaSym> output_metas)
    : Node(output_metas.size()),
      op_(op),
      rule_(rule),
      name_(rule.node_name),
      saved_inputs_(inputs.size()),
      saved_outputs_(output_metas.size()),
      scalars_(scalars.begin(), scalars.end()),
      attrs_(attrs),
      output_metas_(std::move(output_metas)) {
  input_metas_.reserve(inputs.size());
  next_edges().reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_metas_.push_back(inputs[i].meta());
    next_edges().push_back(gradient_edge(inputs[i]));
    if (rule.saved_inputs & (1u << i)) saved_inputs_[i] = SavedTensor(inputs[i]);
  }
  if (rule.name_of) name_ = rule.name_of(GradContext(*this, {}));
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) { return gradients(std::move(grads), false); }

std::vector<Tensor> OpNode::gradients(std::vector<Tensor> grads, bool every_input) const {
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) grads[i] = zeros(output_metas_[i]->shape, output_metas_[i]->dtype);
  std::vector<Tensor> out = rule_.backward(GradContext(*this, grads, every_input));
  RILL_ASSERT(out.size() == next_edges().size(), "[", name_, "] returned ", out.size(), " gradients for ",
              next_edges().size(), " inputs");
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() || (!every_input && !next_edges()[i].valid())) {
      out[i] = Tensor();
      continue;
    }
    // Broadcasting and type promotion undone: the gradient of an input has its shape and dtype.
    out[i] = eager::to_dtype(sum_to(out[i], input_metas_[i]->shape), input_metas_[i]->dtype);
  }
  return out;
}

void OpNode::release_saved() {
  for (SavedTensor& s : saved_inputs_) s.release();
  for (SavedTensor& s : saved_outputs_) s.release();
}

// --- helpers --------------------------------------------------------------------------------

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Shape full = broadcast_shapes(g.shape(), shape, "backward");
  Tensor x = g.shape() == full ? g : eager::expand(g, full);
  const size_t lead = full.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < full.size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && full[d] != 1)) dims.push_back(static_cast<int64_t>(d));
  if (!dims.empty()) x = eager::sum(x, dims, /*keepdim=*/true);
  return eager::reshape(x, shape);
}

Tensor scalar_tensor(Scalar value, DType dtype) { return eager::full({}, value, dtype); }

Tensor zeros(const Shape& shape, DType dtype) { return eager::full(shape, Scalar(int64_t{0}), dtype); }

}  // namespace rill::autograd
