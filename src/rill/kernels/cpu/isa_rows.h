// The hot dense row loops (float32 arithmetic, vector math, activations, float16 conversion, the reductions
// of softmax and norms), built once per x86-64 instruction set and chosen at run time (Note [One build for
// every x86-64] in isa.cpp). Plain pointers only: the file built several times (isa_rows.cpp) includes
// nothing that could instantiate an inline function shared with other files.
#pragma once

#include <cstdint>

namespace rill::cpu {

/** Instruction sets with a build of the row loops, from the plainest up. */
enum class Isa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

/** The float32 math functions with a row of their own (RowKernels::unary). */
enum class UnaryMath : int { kExp, kLog, kTanh, kLog1p, kExpm1, kSin, kCos, kErf, kCount };

/** out[i] = f(x[i]) over n floats (out may alias x). */
using UnaryRow = void (*)(float* out, const float* x, int64_t n);
/** out[i] = f(a[i], b[i]) over n floats (out may alias a or b). */
using BinaryRow = void (*)(float* out, const float* a, const float* b, int64_t n);

/** out[i] = f(a[i], b[i]) over n bfloat16 values, as their bits. */
using Bfloat16Row = void (*)(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n);

/** out[i] = k[i] ? a[i] : b[i] over n 4-byte (8-byte) values by their bits; SelectRows[scalars] reads a (bit 0 of
 * scalars) or b (bit 1) as one value spread over the row. */
using Select32Row = void (*)(uint32_t* out, const bool* k, const uint32_t* a, const uint32_t* b, int64_t n);
using Select64Row = void (*)(uint64_t* out, const bool* k, const uint64_t* a, const uint64_t* b, int64_t n);

/** The per-step numbers of Adam's update (kernels/cpu/optim.cpp's fused_adam_kernel, without amsgrad). */
struct AdamRowArgs {
  float decay, weight_decay, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size, lerp_weight;
  bool lerp_low, maximize, has_weight_decay, decoupled;
};
/** The per-step numbers of SGD's update (fused_sgd_kernel). */
struct SgdRowArgs {
  float weight_decay, momentum, keep, neg_lr;
  bool maximize, has_weight_decay, has_momentum, nesterov, first;
};

/** One build of the row loops. Activation backward rows take (out, grad, input, n, ...). */
struct RowKernels {
  const char* name;
  BinaryRow add, sub, mul, div;
  /** exp, log, ... by UnaryMath: libmvec's vector forms where the build has them, else libm's. */
  UnaryRow unary[static_cast<int>(UnaryMath::kCount)];
  /** erf by rill's polynomial (Note [Vectorised erf] in erf.h), equal to erf_float bit for bit. */
  UnaryRow erf_polynomial;
  void (*gelu)(float* out, const float* x, int64_t n, bool tanh_form);
  void (*gelu_backward)(float* out, const float* grad, const float* x, int64_t n, bool tanh_form);
  UnaryRow silu;
  BinaryRow silu_backward;
  void (*softplus)(float* out, const float* x, int64_t n, float beta, float threshold);
  void (*softplus_backward)(float* out, const float* grad, const float* x, int64_t n, float beta,
                            float threshold);
  void (*elu)(float* out, const float* x, int64_t n, float alpha);
  /** n IEEE float16 values (as their bits) to float32, and back rounded to nearest even. */
  void (*float16_to_float)(const uint16_t* in, float* out, int64_t n);
  void (*float_to_float16)(const float* in, uint16_t* out, int64_t n);
  /** n bfloat16 values (as their bits) to float32, and back rounded to nearest even (NaN stays NaN). */
  void (*bfloat16_to_float)(const uint16_t* in, float* out, int64_t n);
  void (*float_to_bfloat16)(const float* in, uint16_t* out, int64_t n);
  /** out[i] = a[i] op b[i] on bfloat16 bits, computed in float32 and rounded once (out may alias a or b). */
  Bfloat16Row bfloat16_add, bfloat16_sub, bfloat16_mul, bfloat16_div;
  /** where's rows (elementwise.cpp's where_kernel), indexed by which of a and b are one value. */
  Select32Row select32[4];
  Select64Row select64[4];
  /** The row reductions of row_math.h on float32 (n >= 1 for max). */
  float (*row_max)(const float* x, int64_t n);
  float (*row_sum)(const float* x, int64_t n);
  float (*row_dot)(const float* a, const float* b, int64_t n);
  float (*row_centered_squares)(const float* x, float mean, int64_t n);
  /** out[i] = exp(x[i] - m) (out may be null), returns their sum. */
  float (*row_exp_sum)(const float* x, float m, float* out, int64_t n);
  /** The sum of n floats with reduce.cpp's cascade of 16-lane accumulators (Note [Cascade summation]), each
   * level taking block elements or cascade additions. */
  float (*sum_cascade)(const float* x, int64_t n, int64_t block, int cascade);
  /** The sum of n bfloat16 values in 64 float lanes, combined pairwise (reduce.cpp's reduce_block). */
  float (*sum_bfloat16_lanes)(const uint16_t* x, int64_t n);
  /** In double: the sum of x[i], or (square) of (x[i] - mean)^2 (var and std, moments.cpp). */
  double (*moment_sum)(const float* x, int64_t n, double mean, bool square);
  /** One Adam (SGD) step over n dense float32 elements with the scalar loop's operations in its order, each
   * rounded (Note [Fused updates round like the eager optimizer] in optim.cpp); outputs may alias inputs. */
  void (*adam)(float* param_out, float* exp_avg_out, float* exp_avg_sq_out, const float* param, const float* grad,
               const float* exp_avg, const float* exp_avg_sq, int64_t n, const AdamRowArgs& a);
  void (*sgd)(float* param_out, float* buf_out, const float* param, const float* grad, const float* buf, int64_t n,
              const SgdRowArgs& a);
  /** One row of layer_norm given its mean and rstd: y = (x - mean) * rstd * w + b (w, b may be null). */
  void (*layer_norm)(float* y, const float* x, const float* w, const float* b, float mean, float rstd, int64_t n);
  /** One row of layer_norm_backward: dx, and g * xhat and g added into dw and db (w may be null). */
  void (*layer_norm_backward)(float* dx, float* dw, float* db, const float* g, const float* x, const float* w,
                              float mean, float rstd, int64_t n);
};

/** float16 <-> float32 one element at a time, for any CPU (the baseline build's rows, and others' tails). */
void float16_to_float_scalar(const uint16_t* in, float* out, int64_t n);
void float_to_float16_scalar(const float* in, uint16_t* out, int64_t n);

namespace isa_baseline {
/** The build for any x86-64 (SSE2). */
extern const RowKernels kRowKernels;
}  // namespace isa_baseline
namespace isa_avx2 {
/** The build for AVX2 + FMA + F16C. */
extern const RowKernels kRowKernels;
}  // namespace isa_avx2
namespace isa_avx512 {
/** The build for AVX-512 (F, BW, DQ, VL). */
extern const RowKernels kRowKernels;
}  // namespace isa_avx512

/** True when this CPU can run isa's build. */
bool isa_supported(Isa isa);
/** The row loops built for isa (which must be supported). */
const RowKernels& row_kernels_for(Isa isa);
/** The row loops this process uses: the best supported build, or RILL_CPU_ISA's (chosen once, at first use). */
const RowKernels& row_kernels();

}  // namespace rill::cpu
