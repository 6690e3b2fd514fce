// Gradient rule of matmul (ops/matmul.cpp: ndim >= 2, broadcast batch dims):
// dA = dC @ B^T and dB = A^T @ dC, summed over broadcast batch dims by the node.
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2;

Tensor matrix_transpose(const Tensor& t) { return eager::transpose(t, -2, -1); }

std::vector<Tensor> matmul_backward(const GradContext& c) {
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = eager::matmul(c.grad(), matrix_transpose(c.input(1)));
  if (c.needs_grad(1)) gb = eager::matmul(matrix_transpose(c.input(0)), c.grad());
  return {ga, gb};
}

}  // namespace

void register_matmul_rules() {
  define_rule("matmul", {"MmBackward0", matmul_backward, kIn0 | kIn1, 0, [](const GradContext& c) {
                 return c.input_meta(0).ndim() <= 2 && c.input_meta(1).ndim() <= 2 ? "MmBackward0" : "BmmBackward0";
               }});
}

}  // namespace rill::autograd
