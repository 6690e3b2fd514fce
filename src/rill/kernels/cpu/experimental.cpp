// Kernels of the experimental family (ops/experimental.cpp).
#include <chrono>
#include <thread>

#include "rill/kernels/cpu/kernels.h"
#include "rill/ops/op_schema.h"

namespace rill::cpu {
namespace {

// Sleep, then copy self into the dense output with the cast kernel.
void sleep_kernel(const KernelContext& c) {
  std::this_thread::sleep_for(std::chrono::duration<double>(c.attr<double>("seconds")));
  static const OpSchema& cast = ops::get("cast");
  const AttrsSym attrs = make_attrs({c.outputs[0].meta->dtype});
  cast.kernel(DeviceType::kCPU)(KernelContext{cast, c.inputs, c.outputs, *attrs, {}});
}

}  // namespace

void register_experimental_kernels() { ops::set_cpu_kernel("_sleep", sleep_kernel); }

}  // namespace rill::cpu
