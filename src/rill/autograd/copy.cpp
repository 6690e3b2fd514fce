// Gradients of conversions and writes: cast (to(dtype), clone), copy_, fill_,
// and the machinery every in-place write shares (record.cpp calls it): the leaf
// checks and the rebasing of history, with CopySlices for writes through a view
// (Note [Views and in-place] in node.h).
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

// cast: the gradient converted back to the input's dtype (OpNode does the conversion).
std::vector<Tensor> cast_backward(const GradContext& c) { return {c.grad()}; }

// copy_(dst, src): dst's old value is overwritten (a zero gradient); src gets the gradient.
std::vector<Tensor> copy_backward(const GradContext& c) {
  Tensor old;
  if (c.needs_grad(0)) old = zeros(c.input_meta(0).shape, c.grad().dtype());
  return {old, c.grad()};
}

// fill_(dst, value): dst's old value is overwritten.
std::vector<Tensor> fill_backward(const GradContext& c) { return {zeros(c.input_meta(0).shape, c.grad().dtype())}; }

// The history of a view's base after an in-place op fn wrote through the view: the base's gradient with
// the viewed region replaced by what fn's backward makes of that region.
class CopySlices : public Node {
 public:
  CopySlices(std::function<Tensor(const Tensor&)> replay, std::shared_ptr<Node> fn) : Node(1), replay_(std::move(replay)), fn_(fn) {}
  std::string name() const override { return "CopySlices"; }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const size_t n = next_edges().size();
    std::vector<Tensor> out(n);
    if (!grads[0].defined()) return out;
    Tensor result = eager::clone(grads[0]);
    Tensor region = replay_(result);
    std::vector<Tensor> region_grads = fn_->apply({eager::clone(region)});
    if (region_grads[0].defined()) eager::copy_(region, region_grads[0]);
    else eager::fill_(region, Scalar(int64_t{0}));
    out[0] = result;
    for (size_t i = 1; i < n; ++i) out[i] = region_grads[i];
    return out;
  }

  void release_saved() override { fn_->release_saved(); }

 private:
  std::function<Tensor(const Tensor&)> replay_;
  std::shared_ptr<Node> fn_;
};

}  // namespace

void register_copy_rules() {
  define_rule("cast", {"ToCopyBackward0", cast_backward, 0, 0, [](const GradContext& c) {
                 return c.input_meta(0).dtype == c.attr<DType>("dtype") ? "CloneBackward0" : "ToCopyBackward0";
               }});
  define_rule("copy_", {"CopyBackwards", copy_backward});
  define_rule("fill_", {"FillBackward0", fill_backward});
}

void check_inplace(const Tensor& self) {
  if (!self.impl()->requires_grad()) return;
  AutogradMeta* m = find_meta(self);
  if (m && m->view_base.defined()) {
    const Tensor& base = m->view_base;
    RILL_CHECK(!(base.impl()->requires_grad() && is_leaf(base)), Runtime,
               "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return;
  }
  RILL_CHECK(!is_leaf(self), Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
}

void rebase_history(const Tensor& self, std::shared_ptr<Node> node) {
  AutogradMeta* m = find_meta(self);
  if (!m || !m->view_base.defined()) {
    set_history(self, std::move(node), 0);
    return;
  }
  Tensor base = m->view_base;
  auto slices = std::make_shared<CopySlices>(m->view_replay, node);
  slices->next_edges().push_back(gradient_edge(base));
  for (size_t i = 1; i < node->next_edges().size(); ++i) slices->next_edges().push_back(node->next_edges()[i]);
  set_history(base, slices, 0);
  // The view's own history now goes through its base.
  m->grad_fn = make_view_of_base_node(m->view_to_base, Edge{slices, 0});
  m->output_nr = 0;
  m->view_version = self.storage()->version();
  if (m->retains_grad) m->grad_fn->retain_grad(0, self.impl()->autograd_meta_ptr());
  self.impl()->set_requires_grad(true);
}

}  // namespace rill::autograd
