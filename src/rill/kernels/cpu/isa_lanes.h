// The vector of one build of the row loops (isa_rows.cpp) and the operations the rows are written in: 16
// floats (__m512) in the AVX-512 build, 8 (__m256) in the AVX2 build, one float in the baseline build, so
// each row is written once for all three. Included only by isa_rows.cpp; everything is inside that build's
// namespace, so no function here can be taken for another build's at link time (Note [One build for every
// x86-64] in isa.cpp). The math functions are glibc's libmvec vector forms where the build has libmvec
// (Note [Vector math] in elementwise.cpp), else libm per lane.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(RILL_HAVE_LIBMVEC) && defined(__AVX512F__)
extern "C" __m512 _ZGVeN16v_expf(__m512);
extern "C" __m512 _ZGVeN16v_logf(__m512);
extern "C" __m512 _ZGVeN16v_tanhf(__m512);
extern "C" __m512 _ZGVeN16v_sinf(__m512);
extern "C" __m512 _ZGVeN16v_cosf(__m512);
extern "C" __m512 _ZGVeN16v_expm1f(__m512);
extern "C" __m512 _ZGVeN16v_log1pf(__m512);
extern "C" __m512 _ZGVeN16v_erff(__m512);
#elif defined(RILL_HAVE_LIBMVEC) && defined(__AVX2__)
extern "C" __m256 _ZGVdN8v_expf(__m256);
extern "C" __m256 _ZGVdN8v_logf(__m256);
extern "C" __m256 _ZGVdN8v_tanhf(__m256);
extern "C" __m256 _ZGVdN8v_sinf(__m256);
extern "C" __m256 _ZGVdN8v_cosf(__m256);
extern "C" __m256 _ZGVdN8v_expm1f(__m256);
extern "C" __m256 _ZGVdN8v_log1pf(__m256);
extern "C" __m256 _ZGVdN8v_erff(__m256);
#endif

namespace rill::cpu::RILL_ISA_NS {
namespace {

#if defined(__AVX512F__)
using V = __m512;
using Mask = __mmask16;
using Index = __m512i;
inline constexpr int64_t kLanes = 16;
// The maskz forms with every lane set are the plain instructions: several plain intrinsics start from
// _mm512_undefined_*(), which GCC 12 reports as maybe uninitialized.
inline constexpr __mmask16 kAll = 0xffff;
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V splat(float v) { return _mm512_set1_ps(v); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V div(V a, V b) { return _mm512_div_ps(a, b); }
inline V sqrt_lanes(V a) { return _mm512_maskz_sqrt_ps(kAll, a); }  // maskz: GCC 12 warns on the unmasked form
inline V neg_lanes(V a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0x80000000u)))); }
/** a * b + c rounded once. */
inline V fma_exact(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
/** a * b + c, fused where the build has FMA (the reductions' accumulation). */
inline V mul_add(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
/** The smaller of a and b; b where either is NaN (x86's minps). */
inline V min_lanes(V a, V b) { return _mm512_maskz_min_ps(kAll, a, b); }
/** The larger of a and b; b where either is NaN (x86's maxps). */
inline V max_lanes(V a, V b) { return _mm512_mask_max_ps(a, kAll, a, b); }
inline V abs_lanes(V a) { return _mm512_abs_ps(a); }
/** |mag| with sign's sign bit (mag must be non-negative). */
inline V or_sign(V mag, V sign) {
  const __m512i s = _mm512_and_si512(_mm512_castps_si512(sign), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), s));
}
inline Mask greater(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline Mask less_equal(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
inline Mask greater_equal(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
inline Mask is_nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
/** if_true where m is set, else if_false. */
inline V select(Mask m, V if_true, V if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
/** The integer parts of non-negative lanes below 16 (truncation). */
inline Index truncate(V a) { return _mm512_maskz_cvttps_epi32(kAll, a); }
/** table[i] per lane, from a 16-float table aligned to 64 bytes. */
inline V pick(const float* table, Index i) { return _mm512_maskz_permutexvar_ps(kAll, i, _mm512_load_ps(table)); }
#elif defined(__AVX2__)
using V = __m256;
using Mask = __m256;
using Index = __m256i;
inline constexpr int64_t kLanes = 8;
inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V splat(float v) { return _mm256_set1_ps(v); }
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V div(V a, V b) { return _mm256_div_ps(a, b); }
inline V sqrt_lanes(V a) { return _mm256_sqrt_ps(a); }
inline V neg_lanes(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
inline V fma_exact(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V mul_add(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V min_lanes(V a, V b) { return _mm256_min_ps(a, b); }
inline V max_lanes(V a, V b) { return _mm256_max_ps(a, b); }
inline V abs_lanes(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline V or_sign(V mag, V sign) { return _mm256_or_ps(mag, _mm256_and_ps(sign, _mm256_set1_ps(-0.0f))); }
inline Mask greater(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline Mask less_equal(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
inline Mask greater_equal(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
inline Mask is_nan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
inline V select(Mask m, V if_true, V if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
inline Index truncate(V a) { return _mm256_cvttps_epi32(a); }
// Two 8-lane permutes, one per half of the table, and the index's bit 3 chooses between them.
inline V pick(const float* table, Index i) {
  const V low = _mm256_permutevar8x32_ps(_mm256_load_ps(table), i);
  const V high = _mm256_permutevar8x32_ps(_mm256_load_ps(table + 8), i);
  return _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_cmpgt_epi32(i, _mm256_set1_epi32(7))));
}
#else
using V = float;
using Mask = bool;
using Index = int;
inline constexpr int64_t kLanes = 1;
inline V load(const float* p) { return *p; }
inline void store(float* p, V v) { *p = v; }
inline V splat(float v) { return v; }
inline V add(V a, V b) { return a + b; }
inline V sub(V a, V b) { return a - b; }
inline V mul(V a, V b) { return a * b; }
inline V div(V a, V b) { return a / b; }
inline V sqrt_lanes(V a) { return sqrtf(a); }
inline V neg_lanes(V a) { return -a; }
inline V fma_exact(V a, V b, V c) { return fmaf(a, b, c); }
inline V mul_add(V a, V b, V c) { return a * b + c; }
inline V min_lanes(V a, V b) { return a < b ? a : b; }
inline V max_lanes(V a, V b) { return a < b ? b : a; }  // std::max's: a where either is NaN
inline V abs_lanes(V a) { return fabsf(a); }
inline V or_sign(V mag, V sign) { return copysignf(mag, sign); }
inline Mask greater(V a, V b) { return a > b; }
inline Mask less_equal(V a, V b) { return a <= b; }
inline Mask greater_equal(V a, V b) { return a >= b; }
inline Mask is_nan(V a) { return a != a; }
inline V select(Mask m, V if_true, V if_false) { return m ? if_true : if_false; }
inline Index truncate(V a) { return static_cast<int>(a); }
inline V pick(const float* table, Index i) { return table[i]; }
#endif

/** f applied to every lane (the math functions of a build without libmvec). */
template <typename F>
V per_lane(V v, F f) {
  alignas(64) float t[kLanes];
  store(t, v);
  for (int64_t i = 0; i < kLanes; ++i) t[i] = f(t[i]);
  return load(t);
}

/** Sum and max of the lanes, in a fixed order (off the hot loop: once per row). */
inline float lanes_sum(V v) {
  alignas(64) float t[kLanes];
  store(t, v);
  float s[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < kLanes; ++i) s[i % 4] += t[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}
inline float lanes_max(V v) {
  alignas(64) float t[kLanes];
  store(t, v);
  float m = t[0];
  for (int64_t i = 1; i < kLanes; ++i) m = m < t[i] ? t[i] : m;
  return m;
}

// The math functions, by name: libmvec's vector form, or libm's per lane.
#if defined(RILL_HAVE_LIBMVEC) && defined(__AVX512F__)
inline V exp_lanes(V v) { return _ZGVeN16v_expf(v); }
inline V log_lanes(V v) { return _ZGVeN16v_logf(v); }
inline V tanh_lanes(V v) { return _ZGVeN16v_tanhf(v); }
inline V log1p_lanes(V v) { return _ZGVeN16v_log1pf(v); }
inline V expm1_lanes(V v) { return _ZGVeN16v_expm1f(v); }
inline V sin_lanes(V v) { return _ZGVeN16v_sinf(v); }
inline V cos_lanes(V v) { return _ZGVeN16v_cosf(v); }
inline V erf_libm_lanes(V v) { return _ZGVeN16v_erff(v); }
#elif defined(RILL_HAVE_LIBMVEC) && defined(__AVX2__)
inline V exp_lanes(V v) { return _ZGVdN8v_expf(v); }
inline V log_lanes(V v) { return _ZGVdN8v_logf(v); }
inline V tanh_lanes(V v) { return _ZGVdN8v_tanhf(v); }
inline V log1p_lanes(V v) { return _ZGVdN8v_log1pf(v); }
inline V expm1_lanes(V v) { return _ZGVdN8v_expm1f(v); }
inline V sin_lanes(V v) { return _ZGVdN8v_sinf(v); }
inline V cos_lanes(V v) { return _ZGVdN8v_cosf(v); }
inline V erf_libm_lanes(V v) { return _ZGVdN8v_erff(v); }
#else
inline V exp_lanes(V v) { return per_lane(v, expf); }
inline V log_lanes(V v) { return per_lane(v, logf); }
inline V tanh_lanes(V v) { return per_lane(v, tanhf); }
inline V log1p_lanes(V v) { return per_lane(v, log1pf); }
inline V expm1_lanes(V v) { return per_lane(v, expm1f); }
inline V sin_lanes(V v) { return per_lane(v, sinf); }
inline V cos_lanes(V v) { return per_lane(v, cosf); }
inline V erf_libm_lanes(V v) { return per_lane(v, erff); }
#endif

}  // namespace
}  // namespace rill::cpu::RILL_ISA_NS
