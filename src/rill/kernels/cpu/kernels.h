// The CPU kernels, one file per op family mirroring ops/. register_cpu_kernels()
// installs them all into the op registry.
#pragma once

namespace rill::cpu {

/** Install every CPU kernel into the op registry (idempotent). */
void register_cpu_kernels();

void register_elementwise_kernels();
void register_reduce_kernels();
void register_matmul_kernels();
void register_creation_kernels();
void register_softmax_kernels();
void register_norm_kernels();
void register_nn_kernels();

}  // namespace rill::cpu
