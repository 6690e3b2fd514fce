// Gradient rule of matmul (ops/matmul.cpp: ndim >= 2, broadcast batch dims):
// dA = dC @ B^T and dB = A^T @ dC, summed over broadcast batch dims by the node.
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2;

Tensor matrix_transpose(const Tensor& t) { return eager::transpose(t, -2, -1); }

std::vector<Tensor> matmul_backward(const GradContext& c) {
  static const OpSchema& mm = eager::op("matmul");
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = eager::binary(mm, c.grad(), matrix_transpose(c.input(1)));
  if (c.needs_grad(1)) gb = eager::binary(mm, matrix_transpose(c.input(0)), c.grad());
  return {ga, gb};
}

}  // namespace

void register_matmul_rules() {
  define_rule("matmul", {"MmBackward0", matmul_backward, kIn0 | kIn1});
}

}  // namespace rill::autograd
