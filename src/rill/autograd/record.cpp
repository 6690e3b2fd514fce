// The recorder (Note [Recording] in eager/grad_mode.h): what autograd does with
// each op call eager offers it. A call becomes an OpNode running the op's rule;
// a view also remembers its base (Note [Views and in-place] in node.h); an
// in-place write rebases the history of what it wrote into.
#include "rill/autograd/engine.h"
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

using Fn = std::function<Tensor(const Tensor&)>;

bool any_floating(std::span<const Tensor> ts) {
  for (const Tensor& t : ts)
    if (dtype_is_floating(t.dtype())) return true;
  return false;
}

const GradRule* rule_for(const OpSchema& op, const char* suffix = "") {
  const GradRule* rule = find_rule(op);
  RILL_CHECK(rule != nullptr || !creating_graph(), NotImplemented, "[", op.name, suffix, "] a gradient computed "
             "with create_graph=True runs this op, which has no gradient rule yet, so gradients of gradients "
             "through it can't be computed; call backward/grad with create_graph=False");
  RILL_CHECK(rule != nullptr, NotImplemented, "[", op.name, suffix, "] has no gradient rule yet, so its result "
             "can't be differentiated; call it under rill.no_grad() or on detach()ed inputs");
  // Note [Gradients of gradients] in rules.h: a float result of an op marked not differentiable would drop
  // a term silently
  RILL_CHECK(rule->backward || !creating_graph(), NotImplemented, "[", op.name, suffix, "] a gradient computed "
             "with create_graph=True runs this op, which is not differentiable in rill, so gradients of "
             "gradients through it can't be computed; call backward/grad with create_graph=False");
  return rule->backward ? rule : nullptr;
}

void record(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
            std::span<const Tensor> outputs) {
  if (!any_floating(outputs)) return;
  const GradRule* rule = rule_for(op);
  if (!rule) return;
  std::vector<MetaSym> metas;
  metas.reserve(outputs.size());
  for (const Tensor& t : outputs) metas.push_back(t.meta());
  auto node = std::make_shared<OpNode>(op, *rule, inputs, scalars, attrs, std::move(metas));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (rule->saved_outputs & (1u << i)) node->save_output(i, outputs[i]);
    if (dtype_is_floating(outputs[i].dtype())) set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
}

// y = op(x, attrs), a view: y remembers its base, how to take the same view of a tensor shaped like the base,
// and how to map its gradient to the base's; when x requires grad, the view's node is y's history.
void record_view(const OpSchema& op, const Tensor& x, AttrsSym attrs, const Tensor& y) {
  const GradRule* rule = find_rule(op);
  RILL_ASSERT(rule && rule->backward, "view op ", op.name, " has no gradient rule");
  auto node = std::make_shared<OpNode>(op, *rule, std::span<const Tensor>{&x, 1}, std::span<const Scalar>{}, attrs,
                                       std::vector<MetaSym>{y.meta()});
  Fn step = [&op, attrs](const Tensor& t) { return eager::view_call(op, t, attrs); };
  Fn backward = [node](const Tensor& g) { return node->gradients({g}, /*every_input=*/true)[0]; };
  AutogradMeta* xm = find_meta(x);
  AutogradMeta& ym = meta_of(y);
  if (xm && xm->view_base.defined()) {
    ym.view_base = xm->view_base;
    ym.view_replay = [outer = xm->view_replay, step](const Tensor& t) { return step(outer(t)); };
    ym.view_to_base = [outer = xm->view_to_base, backward](const Tensor& g) { return outer(backward(g)); };
  } else {
    ym.view_base = x;
    ym.view_replay = std::move(step);
    ym.view_to_base = std::move(backward);
  }
  ym.view_version = y.storage()->version();
  if (x.impl()->requires_grad()) set_history(y, std::move(node), 0);
}

// op writes into inputs[0]: the node is made from the inputs as they are before the write.
void record_inplace(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                    AttrsSym attrs, void (*write)(void*), void* ctx) {
  const Tensor& self = inputs[0];
  check_inplace(self);
  const GradRule* rule = nullptr;
  if (eager::should_record(inputs) && dtype_is_floating(self.dtype())) rule = rule_for(op, "_");
  if (!rule) {
    write(ctx);
    return;
  }
  auto node = std::make_shared<OpNode>(op, *rule, inputs, scalars, attrs, std::vector<MetaSym>{self.meta()});
  // Saved inputs that share self's memory would be overwritten: save copies of them taken first.
  for (size_t i = 0; i < inputs.size(); ++i)
    if ((rule->saved_inputs & (1u << i)) && inputs[i].storage() == self.storage()) {
      eager::GradModeGuard off(false);
      node->save_input(i, eager::clone(inputs[i]));
    }
  write(ctx);
  if (rule->saved_outputs & 1u) node->save_output(0, self);
  rebase_history(self, std::move(node));
}

constexpr eager::Recorder kRecorder{record, record_view, record_inplace};

}  // namespace

void install() { eager::set_recorder(&kRecorder); }

}  // namespace rill::autograd
