#include "rill/kernels/registry.h"

#include <mutex>

namespace rill::kernels {

void register_all() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::register_cpu_kernels();
    cuda::register_cuda_kernels();
  });
}

}  // namespace rill::kernels
