// The CPU kernels, one file per op family mirroring ops/. register_cpu_kernels()
// (kernels/registry.h) installs them all into the op registry.
#pragma once

namespace rill::cpu {

void register_elementwise_kernels();
/** The special functions (special.cpp). */
void register_special_kernels();
/** The activations (activation.cpp); called by register_elementwise_kernels(). */
void register_activation_kernels();
/** cumsum, cumprod (scan.cpp); called by register_reduce_kernels(). */
void register_scan_kernels();
/** var, std (moments.cpp); called by register_reduce_kernels(). */
void register_moment_kernels();
void register_reduce_kernels();
void register_matmul_kernels();
void register_creation_kernels();
void register_conv_kernels();
void register_pool_kernels();
void register_shape_kernels();
void register_index_kernels();
void register_sort_kernels();
void register_softmax_kernels();
void register_norm_kernels();
void register_nn_kernels();
/** _sdpa and its backward (attention.cpp); called by register_nn_kernels(). */
void register_attention_kernels();
/** The optimizer update ops (optim.cpp). */
void register_optim_kernels();
/** _fused_elementwise (fused.cpp), graph mode's fused chains. */
void register_fused_kernels();
/** The LAPACK factorizations and solvers (linalg.cpp). */
void register_linalg_kernels();
void register_experimental_kernels();

}  // namespace rill::cpu
