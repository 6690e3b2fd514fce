// _linear_activation (ops/nn.cpp): a linear and the activation that alone reads its output, as one op. Graph
// mode's fuse_linear_activation pass makes these calls; the CPU kernel (kernels/cpu/nn.cpp) runs linear's gemm
// and the activation's kernel over its output in place, in one task.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace rill::ops {

/** The activations a _linear_activation applies: op names whose only attr is gelu's approximate. */
inline constexpr std::array<std::string_view, 5> kLinearActivations = {"relu", "tanh", "sigmoid", "silu", "gelu"};

/** Whether op name is one of kLinearActivations. */
inline bool is_linear_activation(std::string_view name) {
  return std::find(kLinearActivations.begin(), kLinearActivations.end(), name) != kLinearActivations.end();
}

}  // namespace rill::ops
