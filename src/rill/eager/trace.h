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
// A pipeline's graph runs each stage's modules on the stage's placement. While nn.Graph traces a staged module's
// forward, the thread's trace stage is 1 + its stage id; every op traced meanwhile, and every autograd node made
// meanwhile, takes it, and backward traces a node's gradient rule under the node's stage. So the tracer tags each
// op with the stage it runs in (OpConf.stage), the gradients included. 0: no stage (the lowering infers one from
// the op's inputs).

/** The calling thread's trace stage (Note [Stages of a trace]). */
int32_t trace_stage();
/** Set the calling thread's trace stage; returns the previous one. */
int32_t set_trace_stage(int32_t stage);

/** The calling thread's trace sink, or null (the usual case: ops run). */
TraceSink* trace_sink();
/** Install sink on the calling thread (null: none); returns the previous one. */
TraceSink* set_trace_sink(TraceSink* sink);

}  // namespace rill::eager
