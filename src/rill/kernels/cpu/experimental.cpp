// Kernels of the experimental family (ops/experimental.cpp).
#include <chrono>
#include <thread>

#include "rill/kernels/cpu/kernels.h"
#include "rill/ops/op_schema.h"

namespace rill::cpu {
namespace {

// Copy input 0 into the dense output 0 with the cast kernel.
void copy_kernel(const KernelContext& c) {
  static const OpSchema& cast = ops::get("cast");
  std::vector<AttrValue> dtype;  // built one by one: GCC 12 misreads a braced list of variants as uninitialised
  dtype.emplace_back(c.outputs[0].meta->dtype);
  const AttrsSym attrs = make_attrs(std::move(dtype));
  cast.kernel(DeviceType::kCPU)(KernelContext{cast, c.inputs.first(1), c.outputs, *attrs, {}});
}

void sleep_kernel(const KernelContext& c) {
  std::this_thread::sleep_for(std::chrono::duration<double>(c.attr<double>("seconds")));
  copy_kernel(c);
}

}  // namespace

void register_experimental_kernels() {
  ops::set_cpu_kernel("_sleep", sleep_kernel);
  ops::set_cpu_kernel("_ssp_variable_proxy", copy_kernel);
}

}  // namespace rill::cpu
