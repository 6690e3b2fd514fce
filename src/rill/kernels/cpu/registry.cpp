#include <mutex>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/registry.h"
#include "rill/ops/op_schema.h"

namespace rill::cpu {

void register_cpu_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    register_elementwise_kernels();
    register_special_kernels();
    register_reduce_kernels();
    register_matmul_kernels();
    register_creation_kernels();
    register_conv_kernels();
    register_pool_kernels();
    register_shape_kernels();
    register_index_kernels();
    register_sort_kernels();
    register_softmax_kernels();
    register_norm_kernels();
    register_nn_kernels();
    register_optim_kernels();
    register_fused_kernels();
    register_linalg_kernels();
    register_experimental_kernels();
  });
}

}  // namespace rill::cpu
