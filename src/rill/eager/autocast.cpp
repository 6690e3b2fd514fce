#include "rill/eager/autocast.h"

#include <string_view>
#include <unordered_map>

#include "rill/eager/functional.h"

namespace rill::eager {
namespace {

thread_local AutocastState t_autocast;

enum class Policy { kNone, kFloat32 };

// PyTorch's CPU float32 list (Note [Autocast]) restricted to the ops rill's registry has.
Policy policy_of(const OpSchema& op) {
  static const std::unordered_map<std::string_view, Policy> kPolicies = {
      {"prod", Policy::kFloat32}, {"prod_dim", Policy::kFloat32},
      {"_lapack_lu_factor_ex", Policy::kFloat32}, {"_lapack_solve_ex", Policy::kFloat32},
      {"_lapack_slogdet", Policy::kFloat32},   {"_lapack_cholesky_ex", Policy::kFloat32},
      {"_lapack_eigh", Policy::kFloat32},      {"_lapack_svd", Policy::kFloat32},
      {"_lapack_qr", Policy::kFloat32},        {"_lapack_solve_triangular", Policy::kFloat32},
      {"_lapack_geqrf", Policy::kFloat32},
  };
  auto it = kPolicies.find(op.name);
  return it == kPolicies.end() ? Policy::kNone : it->second;
}

bool is_16_bit(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace

Tensor autocast_lower_cast(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype || (t.dtype() != DType::kFloat32 && !is_16_bit(t.dtype()))) return t;
  return to_dtype(t, dtype);
}

const AutocastState& autocast_state() { return t_autocast; }

void set_autocast_state(AutocastState state) {
  RILL_CHECK(is_16_bit(state.dtype), Value, "[autocast] CPU autocast runs in rill.bfloat16 or rill.float16, got ",
             dtype_name(state.dtype));
  t_autocast = state;
}

std::span<const Tensor> autocast_inputs(const OpSchema& op, std::span<const Tensor> inputs,
                                        std::vector<Tensor>& storage) {
  const Policy policy = policy_of(op);
  if (policy == Policy::kNone) return inputs;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && is_16_bit(t.dtype());
  if (!any) return inputs;
  storage.reserve(inputs.size());
  for (const Tensor& t : inputs)
    storage.push_back(t.defined() && is_16_bit(t.dtype()) ? to_dtype(t, DType::kFloat32) : t);
  return storage;
}

}  // namespace rill::eager
