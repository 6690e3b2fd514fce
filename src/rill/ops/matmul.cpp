// The matmul family: "matmul" multiplies the last two dims of two tensors of
// ndim >= 2 and broadcasts the dims before them (torch.matmul without the 1-D
// cases, which eager::matmul maps onto this op with unsqueeze/squeeze views).
// Like torch, matmul does not promote: both operands must share a dtype.
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// a: [..., m, k], b: [..., k, n] -> [broadcast(...), m, n], dense, same dtype.
InferResult infer_matmul(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  const TensorMeta& b = *c.inputs[1];
  RILL_CHECK(a.ndim() >= 2 && b.ndim() >= 2, Runtime,
             "[matmul] the matmul op expects operands of at least 2 "
             "dims, got ",
             a.ndim(), "D and ", b.ndim(), "D; use eager::matmul for 1-D operands");
  RILL_CHECK(a.device == b.device, Runtime,
             "[matmul] expected all tensors on the same device, got ", a.device.str(), " and ",
             b.device.str());
  RILL_CHECK(a.dtype == b.dtype, Runtime,
             "[matmul] expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype),
             " != ", dtype_name(b.dtype), "; convert one operand with .to(", dtype_name(a.dtype),
             ") or .to(", dtype_name(b.dtype), ")");
  RILL_CHECK(
      a.dtype != DType::kBool, NotImplemented,
      "[matmul] not implemented for 'Bool'; convert the operands with .int() or .float() first");
  const int64_t m = a.shape[a.ndim() - 2], k = a.shape[a.ndim() - 1];
  const int64_t k2 = b.shape[b.ndim() - 2], n = b.shape[b.ndim() - 1];
  RILL_CHECK(k == k2, Runtime, "[matmul] mat1 and mat2 shapes cannot be multiplied (", m, "x", k,
             " and ", k2, "x", n, ")");
  Shape batch_a(a.shape.begin(), a.shape.end() - 2);
  Shape batch_b(b.shape.begin(), b.shape.end() - 2);
  Shape out = broadcast_shapes(batch_a, batch_b, "matmul");
  out.push_back(m);
  out.push_back(n);
  return {{make_contiguous_meta(out, a.dtype, a.device)}, {}};
}

// self [..., m, k] @ other [k, n]: the rows of self split give rows of the product; other's columns split give
// its columns; k split on both gives a summand; a summand times the other whole is a summand.
std::vector<SbpSignature> sbp_matmul(const SbpContext& c) {
  const int64_t a = c.inputs[0]->ndim(), b = c.inputs[1]->ndim();
  if (a < 2 || b != 2) return {};
  const Sbp B = Sbp::broadcast(), P = Sbp::partial_sum();
  std::vector<SbpSignature> out;
  for (int32_t i = 0; i < a - 1; ++i) out.push_back({{Sbp::split(i), B}, {Sbp::split(i)}});
  out.push_back({{B, Sbp::split(1)}, {Sbp::split(static_cast<int32_t>(a - 1))}});
  out.push_back({{Sbp::split(static_cast<int32_t>(a - 1)), Sbp::split(0)}, {P}});
  out.push_back({{P, B}, {P}});
  out.push_back({{B, P}, {P}});
  return out;
}

}  // namespace

void register_matmul_ops() {
  ops::define("matmul(Tensor self, Tensor other) -> Tensor", infer_matmul, {},
              "matrix product with numpy's rules (1-D, 2-D, batched, broadcast)").sbp = sbp_matmul;
}

}  // namespace rill
