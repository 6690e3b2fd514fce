#include "rill/autograd/composite.h"

#include "rill/autograd/grad_mode.h"

namespace rill::autograd {

CompositeNode::CompositeNode(std::string name, std::span<const Tensor> inputs, std::span<const Tensor> saved,
                             size_t num_outputs, CompositeBackward backward)
    : Node(num_outputs), name_(std::move(name)), backward_(std::move(backward)) {
  next_edges().reserve(inputs.size());
  for (const Tensor& t : inputs) next_edges().push_back(t.defined() ? gradient_edge(t) : Edge{});
  saved_.reserve(saved.size());
  for (const Tensor& t : saved) saved_.emplace_back(t);
}

std::vector<Tensor> CompositeNode::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> saved;
  saved.reserve(saved_.size());
  for (const SavedTensor& s : saved_) saved.push_back(s.unpack(*this));
  std::vector<bool> needs;
  needs.reserve(next_edges().size());
  for (const Edge& e : next_edges()) needs.push_back(e.valid());
  std::vector<Tensor> out = backward_(saved, grads, needs);
  RILL_ASSERT(out.size() == next_edges().size(), "[", name_, "] returned ", out.size(), " gradients for ",
              next_edges().size(), " inputs");
  for (size_t i = 0; i < out.size(); ++i)
    if (!needs[i]) out[i] = Tensor();
  return out;
}

void CompositeNode::release_saved() {
  for (SavedTensor& s : saved_) s.release();
}

void record_composite(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      std::span<const Tensor> saved, CompositeBackward backward, std::vector<bool> differentiable) {
  if (!grad_enabled()) return;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.impl()->requires_grad();
  if (!any) return;
  auto node = std::make_shared<CompositeNode>(name, inputs, saved, outputs.size(), std::move(backward));
  for (size_t i = 0; i < outputs.size(); ++i) {
    bool diff = differentiable.empty() ? true : differentiable[i];
    if (diff && dtype_is_floating(outputs[i].dtype())) set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
}

}  // namespace rill::autograd
