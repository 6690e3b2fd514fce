#include "rill/kernels/cpu/box_muller.h"

#include <cmath>
#include <cstring>

#include "rill/kernels/cpu/isa_rows.h"

// This file is built with -ffp-contract=off (src/rill/CMakeLists.txt): every multiply-add below is fused
// exactly where it is written as one, and nowhere else, whatever the build's -march.

namespace rill::cpu {

void box_muller_blocks(double* d, int64_t blocks, double mean, double std) {
  constexpr double kTwoPi = 2.0 * 3.14159265358979323846;
  for (int64_t b = 0; b < blocks; ++b, d += 16)
    for (int j = 0; j < 8; ++j) {
      const double r = std::sqrt(-2.0 * std::log(1.0 - d[j])), theta = kTwoPi * d[j + 8];
      d[j] = std::fma(r * std::cos(theta), std, mean);
      d[j + 8] = std::fma(r * std::sin(theta), std, mean);
    }
}

// Note [Box-Muller in float32]
// PyTorch's float32 normal_ of 16 or more contiguous elements runs, on a CPU with AVX2 (its AVX2 and AVX-512
// builds alike), eight lanes of Cephes-style single-precision log and sincos (the polynomials of Pommier's
// sse_mathfun, as Cephes publishes them) compiled by GCC, which contracts each product feeding a sum into a
// fused multiply-add. The lane arithmetic is reproduced here one value at a time, with the same operations
// in the same order and the same fusions; checked equal to torch 2.13's output over 4M draws
// (tests/python/test_rng_torch.py). A CPU without AVX2 gets PyTorch's scalar loop instead: libm's logf, theta
// rounded to float, cosf/sinf, then r * c * std + mean unfused. Which one applies follows the row kernels
// (Note [One build for every x86-64] in isa.cpp): any build but the baseline one takes the AVX2 arithmetic.
namespace {

#if defined(__x86_64__)
#define RILL_FMA_TARGET __attribute__((target("fma")))
#else
#define RILL_FMA_TARGET
#endif

RILL_FMA_TARGET inline float fused(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

inline uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// log(x) for x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1)) by a degree-9 polynomial,
// e * log(2) added in two parts.
RILL_FMA_TARGET float cephes_logf(float x) {
  constexpr float kPoly[] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                             -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                             2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
  x = std::fmax(x, float_of(0x00800000u));  // the smallest normal float
  const uint32_t u = bits_of(x);
  float e = static_cast<float>(static_cast<int32_t>(u >> 23) - 0x7f) + 1.0f;
  float m = float_of((u & ~0x7f800000u) | 0x3f000000u);  // the mantissa in [0.5, 1)
  const bool below = m < 0.707106781186547524f;
  const float add_back = below ? m : 0.0f;
  m = m - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  m = m + add_back;
  const float z = m * m;
  float y = kPoly[0];
  for (int i = 1; i < 9; ++i) y = fused(y, m, kPoly[i]);
  y = y * m;
  y = fused(y, z, e * -2.12194440e-4f);
  y = y - z * 0.5f;
  return fused(e, 0.693359375f, m + y);
}

// sin and cos of x >= 0 together: x reduced by multiples of pi/4 (pi/4 in three parts), then the polynomial
// of the octant, signs from the octant.
RILL_FMA_TARGET void cephes_sincosf(float x, float* s, float* c) {
  bool sin_negative = std::signbit(x);
  x = std::fabs(x);
  int32_t j = static_cast<int32_t>(x * 1.27323954473516f);  // 4 / pi, truncated
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  const bool swap = (j & 4) != 0, sin_poly_first = (j & 2) == 0, cos_negative = ((~(j - 2)) & 4) != 0;
  x = fused(y, -0.78515625f, x);
  x = fused(y, -2.4187564849853515625e-4f, x);
  x = fused(y, -3.77489497744594108e-8f, x);
  sin_negative = sin_negative != swap;
  const float z = x * x;
  float yc = fused(fused(2.443315711809948E-005f, z, -1.388731625493765E-003f), z, 4.166664568298827E-002f);
  yc = yc * z;
  yc = fused(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;
  float ys = fused(fused(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
  ys = ys * z;
  ys = fused(ys, x, x);
  const float sin_value = sin_poly_first ? ys : yc, cos_value = sin_poly_first ? yc : ys;
  *s = sin_negative ? -sin_value : sin_value;
  *c = cos_negative ? -cos_value : cos_value;
}

RILL_FMA_TARGET void box_muller_lanes(float* d, int64_t blocks, float mean, float std) {
  const float two_pi = static_cast<float>(2.0 * 3.14159265358979323846);
  for (int64_t b = 0; b < blocks; ++b, d += 16)
    for (int j = 0; j < 8; ++j) {
      const float r = std::sqrt(-2.0f * cephes_logf(1.0f - d[j]));
      float s, c;
      cephes_sincosf(two_pi * d[j + 8], &s, &c);
      d[j] = fused(r * c, std, mean);
      d[j + 8] = fused(r * s, std, mean);
    }
}

void box_muller_scalar(float* d, int64_t blocks, float mean, float std) {
  for (int64_t b = 0; b < blocks; ++b, d += 16)
    for (int j = 0; j < 8; ++j) {
      const float r = std::sqrt(-2.0f * std::log(1.0f - d[j]));
      const float theta = static_cast<float>(2.0 * 3.14159265358979323846 * static_cast<double>(d[j + 8]));
      d[j] = r * std::cos(theta) * std + mean;
      d[j + 8] = r * std::sin(theta) * std + mean;
    }
}

}  // namespace

void box_muller_blocks(float* d, int64_t blocks, float mean, float std) {
  if (&row_kernels() != &row_kernels_for(Isa::kBaseline))
    box_muller_lanes(d, blocks, mean, std);
  else
    box_muller_scalar(d, blocks, mean, std);
}

}  // namespace rill::cpu
