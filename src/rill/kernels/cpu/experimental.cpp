// Kernels of the experimental family (ops/experimental.cpp).
#include <chrono>
#include <thread>

#include "rill/kernels/cpu/kernels.h"
#include "rill/ops/cast_into.h"
#include "rill/ops/op_schema.h"

namespace rill::cpu {
namespace {

// Copy input 0 into the dense output 0.
void copy_kernel(const KernelContext& c) { ops::cast_into(c.inputs[0], c.outputs[0]); }

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
