// One call of the cast kernel between two buffers a kernel already holds: what the kernels that copy (the graph's
// SSP proxy and _sleep, the comm layer packing a strided tensor) run instead of each building the call.
#pragma once

#include "rill/ops/op_schema.h"

namespace rill::ops {

/** in's elements into out (dense, of in's shape), converted to out's dtype; in may have any strides. */
void cast_into(const TensorArg& in, const TensorArg& out);

}  // namespace rill::ops
