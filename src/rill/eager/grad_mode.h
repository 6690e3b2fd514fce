// Grad mode and the recording seam (Note [Recording]).
//
// Note [Recording]
// Every op call goes through one of eager's entry points: call() (and call1,
// call_into), view_call() for views, inplace() for writes into an input. Each
// ends by offering the call to the recorder when grad mode is on and an input
// requires grad (views: whenever grad mode is on, since an in-place write
// through a view later needs its base). The autograd layer installs the
// recorder (autograd::install(), called once by the Python module and the C++
// tests); it attaches the backward node of the op's gradient rule to the
// outputs. Eager knows nothing of nodes, and there is no second, recorded copy
// of the functional API: a composition in eager (matmul's 1-D cases, conv1d
// through conv2d, stack through cat) is recorded op by op, and a composite op
// with a rule of its own (logsumexp, norm) runs its pieces with recording off
// and is recorded once (record_composite in functional.h). The same seam is
// where graph mode's tracer will see every op.
#pragma once

#include <span>

#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"

namespace rill::eager {

/** True when ops on the calling thread are recorded (rill.no_grad(), rill.enable_grad()). On by default. */
bool grad_enabled();
/** Turn recording on or off for the calling thread. */
void set_grad_enabled(bool enabled);

/** Sets grad mode for a scope and restores the previous mode when it ends. */
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

/** What the autograd layer does with a call (Note [Recording]). */
struct Recorder {
  /** op(inputs, scalars, attrs) returned outputs; an input requires grad. */
  void (*record)(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                 AttrsSym attrs, std::span<const Tensor> outputs);
  /** y = op(x, attrs) is a view (grad mode on). */
  void (*record_view)(const OpSchema& op, const Tensor& x, AttrsSym attrs, const Tensor& y);
  /** op writes into inputs[0] (grad mode on): checks the write is allowed, calls write(ctx), records it. */
  void (*record_inplace)(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                         AttrsSym attrs, void (*write)(void*), void* ctx);
};

/** Install the recorder (the autograd layer's; null: none). */
void set_recorder(const Recorder* recorder);
/** The installed recorder, or null. */
const Recorder* recorder();

/** True when a call on inputs is recorded: a recorder, grad mode on and an input that requires grad. */
bool should_record(std::span<const Tensor> inputs);

}  // namespace rill::eager
