// Autocast: mixed precision on CPU (rill.autocast("cpu", dtype=rill.bfloat16)).
//
// Note [Autocast]
// While autocast is on for the calling thread, the functions on PyTorch's CPU lists cast their floating
// inputs first. The lower-precision ones (PyTorch's "lower_precision_fp" list) take float32 inputs in the
// autocast dtype and run their body with autocast off, as PyTorch runs them below autocast: eager::matmul
// (and so mm, bmm, x @ w, addmm, baddbmm) and eager::linear here, through autocast_lower; the convolutions,
// prelu and scaled_dot_product_attention in rill.nn.functional through rill.amp's decorator, which reads this
// state. The float32 ones (PyTorch's "fp32" list: prod and the LAPACK solvers here, the losses in Python) take
// float16/bfloat16 inputs in float32: an op call (eager::call / call1) on such an op casts them. float64 is
// never cast, as in PyTorch. The casts are ordinary recorded ops, so gradients flow back to the original
// dtype; backward passes run with autocast off (the forward's casts already fixed each op's dtype).
#pragma once

#include <span>
#include <vector>

#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"

namespace rill::eager {

/** Autocast's state on the calling thread. */
struct AutocastState {
  bool enabled = false;
  DType dtype = DType::kBFloat16;
};

const AutocastState& autocast_state();
void set_autocast_state(AutocastState state);

/** Sets the autocast state for a scope and restores the previous one when it ends. */
class AutocastGuard {
 public:
  explicit AutocastGuard(AutocastState state) : previous_(autocast_state()) { set_autocast_state(state); }
  ~AutocastGuard() { set_autocast_state(previous_); }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  AutocastState previous_;
};

/** t in the autocast dtype when it is float32 or the other 16-bit type; other tensors as they are. */
Tensor autocast_lower_cast(const Tensor& t, DType dtype);

/** f(args...) for a function on the lower-precision list, called while autocast is on: its tensors cast by
    autocast_lower_cast, its body run with autocast off. */
template <typename F, typename... Args>
Tensor autocast_lower(F&& f, const Args&... args) {
  const DType dtype = autocast_state().dtype;
  AutocastGuard off({false, dtype});
  return f(autocast_lower_cast(args, dtype)...);
}

/** The inputs an op on the float32 list runs on under autocast: inputs itself, or casts stored in storage. */
std::span<const Tensor> autocast_inputs(const OpSchema& op, std::span<const Tensor> inputs,
                                        std::vector<Tensor>& storage);

}  // namespace rill::eager
