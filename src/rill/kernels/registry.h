// The kernels layer's entry point: each device's kernels fill their column of the
// op registry's kernel table (OpSchema::kernels). Devices this build lacks link a
// stub (kernels/no_cuda/) that leaves the column empty, so the layers above include
// nothing device-specific.
#pragma once

namespace rill::kernels {

/** Install the kernels of every device into the op registry (idempotent, thread-safe). */
void register_all();

}  // namespace rill::kernels

namespace rill::cpu {
/** Install every CPU kernel (kernels/cpu/registry.cpp). */
void register_cpu_kernels();
}  // namespace rill::cpu

namespace rill::cuda {
/** Install every CUDA kernel; kernels/no_cuda/ in a build without CUDA. */
void register_cuda_kernels();
}  // namespace rill::cuda
