// What the reductions' kernels, inference and gradient rules share: the arguments of
// var and std, whichever of their overloads (ops/reduce.cpp) a call took.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/ops/op_schema.h"

namespace rill {

/** The arguments of a var or std call: the dims (empty: every dim), keepdim, and the correction. */
struct MomentArgs {
  std::vector<int64_t> dims;
  bool keepdim = false;
  double correction = 1.0;
};

/** The arguments of a call of var, var_dim, var_unbiased, std, std_dim or std_unbiased. */
MomentArgs moment_args(const OpSchema& op, const Attrs& attrs);

}  // namespace rill
