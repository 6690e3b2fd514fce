// PyTorch's normal_ transform of the host generator (Note [Drawing on the host] in python/rill/_generator.py):
// Box-Muller over blocks of 16 uniforms, u1 = 1 - d[j], u2 = d[j + 8] for j < 8, done in place, with the
// same arithmetic as PyTorch's CPU kernels so that the same uniforms give the same normals bit for bit.
#pragma once

#include <cstdint>

namespace rill::cpu {

/** float64: libm's log/cos/sin and one fused multiply-add per value (PyTorch's scalar loop). */
void box_muller_blocks(double* d, int64_t blocks, double mean, double std);

/** float32: on a CPU with AVX2 and FMA, PyTorch's AVX2 path (Note [Box-Muller in float32] in box_muller.cpp);
 *  on any other, its scalar loop (libm's logf/cosf/sinf, theta rounded to float). */
void box_muller_blocks(float* d, int64_t blocks, float mean, float std);

}  // namespace rill::cpu
