// Backward nodes for composite functions: an op family whose forward is a
// composition in eager/ (argument normalisation, views, several ops) and whose
// backward ops exist on their own (convolution, pooling). The rule is a lambda
// next to the forward, instead of a GradRule keyed by one op's name.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "rill/autograd/node.h"

namespace rill::autograd {

/** Gradients of the function's inputs (undefined: none) from its outputs' gradients (undefined when none
 * arrived) and the saved tensors; needs[i] says whether input i's gradient goes anywhere. */
using CompositeBackward = std::function<std::vector<Tensor>(
    const std::vector<Tensor>& saved, const std::vector<Tensor>& grads, const std::vector<bool>& needs)>;

/** The backward node of one composite function call. */
class CompositeNode : public Node {
 public:
  CompositeNode(std::string name, std::span<const Tensor> inputs, std::span<const Tensor> saved,
               size_t num_outputs, CompositeBackward backward);
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_saved() override;

 private:
  std::string name_;
  std::vector<SavedTensor> saved_;
  CompositeBackward backward_;
};

/** When an input requires grad (and grad mode is on), make outputs[i] for differentiable[i] the outputs of a
 * CompositeNode named name; inputs may hold undefined tensors (absent optional arguments). */
void record_composite(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     std::span<const Tensor> saved, CompositeBackward backward,
                     std::vector<bool> differentiable = {});

}  // namespace rill::autograd
