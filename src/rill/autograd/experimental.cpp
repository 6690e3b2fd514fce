// Gradient rules of the experimental family (ops/experimental.cpp).
#include "rill/autograd/rules.h"
#include "rill/eager/functional.h"

namespace rill::autograd {
namespace {

// The gradient, after as long a sleep: a backward of the forward's duration.
std::vector<Tensor> sleep_backward(const GradContext& c) {
  Tensor grad = c.grad();
  return {eager::call1(c.op(), {&grad, 1}, {}, c.interned_attrs())};
}

}  // namespace

void register_experimental_rules() { define_rule("_sleep", {"SleepBackward0", sleep_backward}); }

}  // namespace rill::autograd
