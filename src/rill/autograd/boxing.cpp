// Gradient rules of the boxing family (ops/boxing.cpp): to_global inside a traced step passes its gradient on; the
// graph boxes it back to what the input's producer has (graph/passes/sbp.cpp).
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

std::vector<Tensor> grad_itself(const GradContext& c) { return {c.grad()}; }

}  // namespace

void register_boxing_rules() { define_rule("_to_global", {"ToGlobalBackward0", grad_itself}); }

}  // namespace rill::autograd
