#include "rill/autograd/node.h"

#include <atomic>
#include <sstream>

#include "rill/autograd/rules.h"
#include "rill/eager/functional.h"
#include "rill/eager/trace.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

std::atomic<uint64_t> g_next_sequence_nr{0};

// PyTorch's legacy type name, e.g. "FloatTensor", used in its error messages.
const char* legacy_type_name(DType t) {
  switch (t) {
    case DType::kBool: return "BoolTensor";
    case DType::kUInt8: return "ByteTensor";
    case DType::kInt8: return "CharTensor";
    case DType::kInt16: return "ShortTensor";
    case DType::kInt32: return "IntTensor";
    case DType::kInt64: return "LongTensor";
    case DType::kFloat16: return "HalfTensor";
    case DType::kBFloat16: return "BFloat16Tensor";
    case DType::kFloat32: return "FloatTensor";
    case DType::kFloat64: return "DoubleTensor";
  }
  return "Tensor";
}

}  // namespace

// --- hooks ----------------------------------------------------------------------------------

int64_t HookList::add(GradHook hook) {
  int64_t id = next_id++;
  hooks.emplace_back(id, std::move(hook));
  return id;
}

void HookList::remove(int64_t id) {
  for (auto it = hooks.begin(); it != hooks.end(); ++it) {
    if (it->first == id) {
      hooks.erase(it);
      return;
    }
  }
}

Tensor HookList::run(Tensor grad) const {
  // A copy: a hook may remove itself (or others) while running.
  std::vector<GradHook> fns;
  fns.reserve(hooks.size());
  for (const auto& h : hooks) fns.push_back(h.second);
  for (const GradHook& fn : fns) {
    Tensor r = fn(grad);
    if (r.defined()) grad = std::move(r);
  }
  return grad;
}

// --- saved tensors --------------------------------------------------------------------------

SavedTensor::SavedTensor(const Tensor& t, int output_nr) : output_nr_(output_nr) {
  if (!t.defined()) return;
  data_ = t.view_as_meta(t.meta(), t.offset());
  version_ = t.storage()->version();
}

Tensor SavedTensor::unpack(const Node& owner) const {
  RILL_CHECK(!released_, Runtime,
             "Trying to backward through the graph a second time (or directly access saved tensors after they have "
             "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
             "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
             "if you need to access saved tensors after calling backward.");
  if (!data_.defined()) return data_;
  uint32_t now = data_.storage()->version();
  if (now != version_) {
    std::ostringstream what;
    what << "[rill." << legacy_type_name(data_.dtype()) << " " << shape_str(data_.shape()) << "]";
    if (output_nr_ >= 0) what << ", which is output " << output_nr_ << " of " << owner.name() << ",";
    RILL_FAIL(Runtime, "one of the variables needed for gradient computation has been modified by an inplace "
              "operation: ", what.str(), " is at version ", now, "; expected version ", version_,
              " instead. Hint: clone() the tensor before modifying it in place, or do the in-place operation "
              "after backward.");
  }
  return data_;
}

void SavedTensor::release() {
  if (!data_.defined()) return;
  data_ = Tensor();
  released_ = true;
}

// --- nodes ----------------------------------------------------------------------------------

Node::Node(size_t num_inputs)
    : num_inputs_(num_inputs),
      sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)),
      traced_op_(eager::trace_last_op()) {}

std::shared_ptr<HookList>& Node::tensor_hooks(uint32_t nr) {
  if (tensor_hooks_.size() <= nr) tensor_hooks_.resize(nr + 1);
  if (!tensor_hooks_[nr]) tensor_hooks_[nr] = std::make_shared<HookList>();
  return tensor_hooks_[nr];
}

const HookList* Node::find_tensor_hooks(uint32_t nr) const {
  return nr < tensor_hooks_.size() ? tensor_hooks_[nr].get() : nullptr;
}

void Node::retain_grad(uint32_t nr, const std::shared_ptr<AutogradMeta>& meta) {
  if (retained_.size() <= nr) retained_.resize(nr + 1);
  retained_[nr] = meta;
}

std::shared_ptr<AutogradMeta> Node::retained(uint32_t nr) const {
  return nr < retained_.size() ? retained_[nr].lock() : nullptr;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : Node(1), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  if (!grads[0].defined()) return {};
  Tensor leaf(leaf_);
  accumulate_grad(leaf, grads[0]);
  // register_post_accumulate_grad_hook (DistributedDataParallel starts a bucket's all-reduce from here).
  if (AutogradMeta* m = find_meta(leaf); m && m->post_accumulate_hooks) m->post_accumulate_hooks->run(leaf);
  return {};
}

void accumulate_grad(const Tensor& t, const Tensor& grad) {
  static const OpSchema& add = eager::op("add");
  RILL_CHECK(grad.shape() == t.shape(), Runtime, "[backward] the gradient of a tensor of shape ",
             shape_str(t.shape()), " has shape ", shape_str(grad.shape()), "; a hook must return a gradient of the "
             "tensor's shape");
  AutogradMeta& m = meta_of(t);
  if (!m.grad.defined()) {
    // A copy: the incoming gradient may be shared (the same tensor reaches several leaves, or the
    // user passed it to backward()).
    Tensor g = eager::to_dtype(grad, t.dtype());
    m.grad = g.is_same(grad) ? eager::clone(grad) : g;
    return;
  }
  // With create_graph (grad mode on in backward) the sum is a recorded op, so .grad has a history, as in
  // PyTorch; otherwise in place, as PyTorch does: a reference to .grad sees the sum.
  if (eager::grad_enabled() && (grad.impl()->requires_grad() || m.grad.impl()->requires_grad())) {
    m.grad = eager::add(m.grad, eager::to_dtype(grad, t.dtype()));
    return;
  }
  Tensor in[2] = {m.grad, grad};
  eager::call_into(add, in, {}, empty_attrs(), m.grad);
  m.grad.storage()->bump_version();
}

std::vector<Tensor> ViewOfBase::apply(std::vector<Tensor>&& grads) {
  if (!grads[0].defined()) return {Tensor()};
  return {to_base_(grads[0])};
}

std::shared_ptr<Node> make_view_of_base_node(std::function<Tensor(const Tensor&)> to_base, Edge base) {
  auto node = std::make_shared<ViewOfBase>(std::move(to_base));
  node->next_edges().push_back(std::move(base));
  return node;
}

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

// --- per-tensor state -----------------------------------------------------------------------

AutogradMeta& meta_of(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (!impl->autograd_meta()) impl->set_autograd_meta(std::make_shared<AutogradMeta>());
  return *impl->autograd_meta();
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* m = find_meta(t);
  if (!m) return nullptr;
  // A view whose memory was written in place since its node was made (Note [Views and in-place]).
  if (m->view_base.defined() && m->grad_fn && t.storage()->version() != m->view_version) {
    Edge base = gradient_edge(m->view_base);
    m->view_version = t.storage()->version();
    if (base.valid()) {
      auto node = make_view_of_base_node(m->view_to_base, std::move(base));
      m->grad_fn = std::move(node);
      m->output_nr = 0;
    }
  }
  return m->grad_fn;
}

Edge gradient_edge(const Tensor& t) {
  if (auto fn = grad_fn(t)) return {std::move(fn), find_meta(t)->output_nr};
  if (t.impl()->requires_grad()) return {grad_accumulator(t), 0};
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = meta_of(t);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
  if (m.hooks) acc->tensor_hooks(0) = m.hooks;
  m.grad_accumulator = acc;
  return acc;
}

void set_history(const Tensor& t, std::shared_ptr<Node> node, uint32_t output_nr) {
  AutogradMeta& m = meta_of(t);
  m.grad_fn = std::move(node);
  m.output_nr = output_nr;
  m.view_version = t.storage()->version();
  if (m.retains_grad) m.grad_fn->retain_grad(output_nr, t.impl()->autograd_meta_ptr());
  t.impl()->set_requires_grad(true);
}

std::shared_ptr<HookList> tensor_hooks(const Tensor& t) {
  if (auto fn = grad_fn(t)) return fn->tensor_hooks(find_meta(t)->output_nr);
  AutogradMeta& m = meta_of(t);
  if (!m.hooks) {
    m.hooks = std::make_shared<HookList>();
    if (auto acc = m.grad_accumulator.lock()) acc->tensor_hooks(0) = m.hooks;
  }
  return m.hooks;
}

void retain_grad(const Tensor& t) {
  RILL_CHECK(t.impl()->requires_grad(), Runtime, "can't retain_grad on Tensor that has requires_grad=False");
  auto fn = grad_fn(t);
  if (!fn) return;
  AutogradMeta& m = meta_of(t);
  m.retains_grad = true;
  fn->retain_grad(m.output_nr, t.impl()->autograd_meta_ptr());
}

}  // namespace rill::autograd
