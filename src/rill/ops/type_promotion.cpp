#include "rill/ops/type_promotion.h"

#include <optional>

namespace rill {
namespace {

using Opt = std::optional<DType>;

Opt promote_opt(Opt a, Opt b) {
  if (!a) return b;
  if (!b) return a;
  return promote_types(*a, *b);
}

// Combine the result of a higher-priority tier with a lower one: the lower tier
// counts only when it is of a higher category.
Opt combine_categories(Opt higher, Opt lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (dtype_is_floating(*higher)) return higher;
  if (*higher == DType::kBool || dtype_is_floating(*lower)) return promote_types(*higher, *lower);
  if (dtype_is_integral(*higher) && *lower == DType::kBool) return higher;
  return higher;
}

}  // namespace

DType result_type(std::span<const MetaSym> tensors, std::span<const Scalar> scalars) {
  Opt dim_result, zero_result, wrapped_result;
  for (const MetaSym& m : tensors) {
    if (m->ndim() > 0) {
      dim_result = promote_opt(dim_result, m->dtype);
    } else {
      zero_result = promote_opt(zero_result, m->dtype);
    }
  }
  for (const Scalar& s : scalars) wrapped_result = promote_opt(wrapped_result, s.default_dtype());
  Opt r = combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
  return r ? *r : kDefaultFloat;
}

}  // namespace rill
