// The experimental family: ops for measuring the runtime itself. _sleep is a kernel of a fixed duration (a copy
// of its input after a sleep), so a pipeline's bubble can be measured without the cores confounding it
// (bench/pipeline.py); rill.experimental.sleep binds it.
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"

namespace rill {
namespace {

InferResult infer_sleep(const InferContext& c) {
  const double seconds = c.attr<double>("seconds");
  RILL_CHECK(seconds >= 0 && seconds <= 60, Value, "[sleep] seconds must be in [0, 60], got ", seconds);
  const TensorMeta& x = *c.inputs[0];
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {}};
}

}  // namespace

void register_experimental_ops() {
  ops::define("_sleep(Tensor self, float seconds) -> Tensor", infer_sleep, {.function = true},
              "self, after sleeping for seconds (a kernel of a fixed duration; its gradient sleeps as long)");
}

}  // namespace rill
