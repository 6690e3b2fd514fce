// The gradient of sort (ops/sort.cpp): the gradient of the sorted values is
// scattered back to the positions they came from. topk and kthvalue are composite
// ops computed as views of a sort (eager/sort.cpp) and recorded as those pieces, so their
// gradients reach the input through it.
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kOut1 = 2;

std::vector<Tensor> sort_backward(const GradContext& c) {
  const TensorMeta& x = c.input_meta(0);
  const Tensor& g = c.grad();
  if (x.ndim() == 0) return {g};
  return {eager::scatter(zeros(x.shape, g.dtype()), c.attr<int64_t>("dim"), c.output(1), g, "")};
}

}  // namespace

void register_sort_rules() { define_rule("sort", {"SortBackward0", sort_backward, 0, kOut1}); }

}  // namespace rill::autograd
