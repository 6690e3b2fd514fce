// PyTorch's category-aware type promotion (DESIGN.md §4): tensors with
// dimensions decide first; a 0-dim tensor or a Python number only widens the
// result when it is of a higher category (bool < integer < floating).
#pragma once

#include <span>

#include "rill/core/scalar.h"
#include "rill/core/tensor_meta.h"

namespace rill {

/** The default floating dtype (float32). */
inline constexpr DType kDefaultFloat = DType::kFloat32;

/** Result dtype of an op over these tensor operands and Python numbers. */
DType result_type(std::span<const MetaSym> tensors, std::span<const Scalar> scalars);

/** dtype for ops that always produce floats (sqrt, exp, true division): ints and bool become float32. */
inline DType to_floating(DType t) { return dtype_is_floating(t) ? t : kDefaultFloat; }

}  // namespace rill
