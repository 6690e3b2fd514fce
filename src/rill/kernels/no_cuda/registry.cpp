// A build without CUDA: no op gets a CUDA kernel, so an op on a CUDA tensor raises
// (eager/functional.cpp) instead of failing to link.
#include "rill/kernels/registry.h"

namespace rill::cuda {

void register_cuda_kernels() {}

}  // namespace rill::cuda
