// The tracing seam (Note [Tracing]).
//
// Note [Tracing]
// Graph mode records a whole step instead of running it. While a trace sink is
// installed on a thread, eager's entry points still infer metas, convert inputs
// and create output tensors (so shapes, dtypes and Python code work unchanged),
// and still offer each call to the autograd recorder (so backward() inside a
// trace runs the same gradient rules, traced), but hand the call to the sink in
// place of submitting an instruction: call()/call1() as on_call, a write into an
// existing tensor (call_into: in-place ops, copy_, fill_) as on_write, a view as
// on_view. The tensors made this way never get memory. A sync point on one of
// them (item(), numpy(), printing) asks the sink first (on_sync), which refuses
// it. The sink is graph/tracer.h's Tracer; eager knows only this interface.
#pragma once

#include <cstdint>
#include <span>

#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"

namespace rill::eager {

/** Where traced calls go instead of the VM (Note [Tracing]). */
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /** outputs = op(inputs, scalars, attrs); the outputs are new tensors without memory. */
  virtual void on_call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                       AttrsSym attrs, std::span<const Tensor> outputs) = 0;
  /** op(inputs, scalars, attrs)'s one output written into out (an existing tensor). */
  virtual void on_write(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                        AttrsSym attrs, const Tensor& out) = 0;
  /** y = op(x, attrs) is a view. */
  virtual void on_view(const OpSchema& op, const Tensor& x, AttrsSym attrs, const Tensor& y) = 0;
  /** A sync point on t, what names it ("item()"); raises when t has no value (it was made by the trace). */
  virtual void on_sync(const Tensor& t, const char* what) = 0;
};

// Note [Stages of a trace]
// A global graph runs each op where its placement says (graph/passes/sbp.cpp), and a gradient where the op it is
// the gradient of runs. While nn.Graph traces a staged module's forward (a pipeline stage), the thread's trace
// stage is 1 + its stage id, and every op traced meanwhile takes it (OpConf.stage). The tracer numbers the ops it
// records (1, 2, ...: the thread's last traced op); an autograd node keeps the number of the op it was made for,
// and backward traces the node's gradient rule with the thread's "gradient of" set to it, so each gradient op
// names its forward op (OpConf.grad_of). 0: none.

/** The calling thread's trace stage (Note [Stages of a trace]). */
int32_t trace_stage();
/** Set the calling thread's trace stage; returns the previous one. */
int32_t set_trace_stage(int32_t stage);
/** The number of the op the calling thread's trace recorded last (0: none). */
int64_t trace_last_op();
void set_trace_last_op(int64_t op);
/** The number of the op whose gradient the calling thread traces now (0: none); set returns the previous one. */
int64_t trace_grad_of();
int64_t set_trace_grad_of(int64_t op);

/** The calling thread's trace sink, or null (the usual case: ops run). */
TraceSink* trace_sink();
/** Install sink on the calling thread (null: none); returns the previous one. */
TraceSink* set_trace_sink(TraceSink* sink);

}  // namespace rill::eager
