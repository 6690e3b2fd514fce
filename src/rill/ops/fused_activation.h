// A linear or a conv2d and the activation that alone reads its output, as one op: _linear_activation (ops/nn.cpp)
// and _conv2d_activation (ops/conv.cpp). Graph mode's fuse_activation pass makes these calls; their CPU kernels
// (kernels/cpu/nn.cpp, conv.cpp) compute the producer and then the activation in the same task.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "rill/ops/op_schema.h"

namespace rill::ops {

/** The activations a fused op applies: op names whose only attr is gelu's approximate. */
inline constexpr std::array<std::string_view, 5> kFusedActivations = {"relu", "tanh", "sigmoid", "silu", "gelu"};

/** Whether op name is one of kFusedActivations. */
inline bool is_fused_activation(std::string_view name) {
  return std::find(kFusedActivations.begin(), kFusedActivations.end(), name) != kFusedActivations.end();
}

/** Raises unless the call's attrs name a fused activation (and gelu's approximate) and its input is float32. */
void check_fused_activation(const InferContext& c);

/** The activation op's own kernel over out in place (what the unfused op computes into its own output). */
void activate_in_place(const TensorArg& out, const std::string& activation, const std::string& approximate);

}  // namespace rill::ops
