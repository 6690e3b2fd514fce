// The experimental family: ops for measuring the runtime itself, and the graph runtime's own. _sleep is a kernel of
// a fixed duration (a copy of its input after a sleep), so a pipeline's bubble can be measured without the cores
// confounding it (bench/pipeline.py); rill.experimental.sleep binds it. _ssp_variable_proxy is a copy of a
// variable that only the ssp pass adds to a job (Note [SSP] in graph/passes/ssp.cpp).
#include "rill/ops/op_schema.h"
#include "rill/ops/sbp.h"
#include "rill/util/error.h"

namespace rill {
namespace {

InferResult infer_sleep(const InferContext& c) {
  const double seconds = c.attr<double>("seconds");
  RILL_CHECK(seconds >= 0 && seconds <= 60, Value, "[sleep] seconds must be in [0, 60], got ", seconds);
  const TensorMeta& x = *c.inputs[0];
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {}};
}

// A dense copy of the variable; in graph mode, the copy one piece's forward and backward read.
InferResult infer_ssp_variable_proxy(const InferContext& c) {
  RILL_CHECK(c.attr<int64_t>("buffer_size") >= 1, Value, "[ssp_variable_proxy] buffer_size must be at least 1, got ",
             c.attr<int64_t>("buffer_size"));
  const TensorMeta& x = *c.inputs[0];
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {}};
}

}  // namespace

void register_experimental_ops() {
  ops::define("_ssp_variable_proxy(Tensor variable, int buffer_size, int stage) -> Tensor", infer_ssp_variable_proxy,
              {.differentiable = false}, "a copy of variable (graph mode: a ring of buffer_size copies, up to "
              "buffer_size - 1 updates stale, for pipeline stage stage)")
      .sbp = ops::elementwise_sbp;
  ops::define("_sleep(Tensor self, float seconds) -> Tensor", infer_sleep, {.function = true},
              "self, after sleeping for seconds (a kernel of a fixed duration; its gradient sleeps as long)");
}

}  // namespace rill
