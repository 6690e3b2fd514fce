// The row loops of isa_rows.h. CMake builds this file once per instruction set, each time with that set's
// compiler flags and RILL_ISA_NS naming its namespace (Note [One build for every x86-64] in isa.cpp). Each
// row is written once on the vector V of isa_lanes.h (16, 8 or 1 floats); a row's last n % kLanes elements
// go through a zero-padded block of one vector, lanes being independent. The formulas are those of the
// scalar functors in elementwise.cpp and activation.cpp.
#include "rill/kernels/cpu/isa_rows.h"

#include "rill/kernels/cpu/erf.h"  // its tables only: its functions are not built per instruction set
#include "rill/kernels/cpu/isa_lanes.h"

namespace rill::cpu::RILL_ISA_NS {
namespace {

void add_row(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void sub_row(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}
void mul_row(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
void div_row(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
}

// where by bits: a mask from each bool, no branch (a mask of random signs, as relu's backward has, mispredicts
// every other element). A plain loop the compiler vectorises with this build's instruction set; the bools are
// widened to the value's width in the vector.
template <typename U, bool kAOne, bool kBOne>
void select_row(U* __restrict out, const bool* __restrict k, const U* __restrict a, const U* __restrict b,
                int64_t n) {
  const uint8_t* __restrict bytes = reinterpret_cast<const uint8_t*>(k);  // GCC 12 vectorises no loop over bools
  const U a0 = *a, b0 = *b;
  for (int64_t i = 0; i < n; ++i) {
    const U m = static_cast<U>(U{0} - static_cast<U>(bytes[i]));
    out[i] = static_cast<U>(((kAOne ? a0 : a[i]) & m) | ((kBOne ? b0 : b[i]) & static_cast<U>(~m)));
  }
}

/** out = f(x) by vectors; the tail through a padded vector. */
template <typename F>
void map_row(float* out, const float* x, int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, f(load(x + i)));
  if (i < n) {
    alignas(64) float t[kLanes] = {};
    std::memcpy(t, x + i, static_cast<size_t>(n - i) * sizeof(float));
    store(t, f(load(t)));
    std::memcpy(out + i, t, static_cast<size_t>(n - i) * sizeof(float));
  }
}

/** out = f(a, b) by vectors. */
template <typename F>
void map_row(float* out, const float* a, const float* b, int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, f(load(a + i), load(b + i)));
  if (i < n) {
    alignas(64) float ta[kLanes] = {}, tb[kLanes] = {};
    std::memcpy(ta, a + i, static_cast<size_t>(n - i) * sizeof(float));
    std::memcpy(tb, b + i, static_cast<size_t>(n - i) * sizeof(float));
    store(ta, f(load(ta), load(tb)));
    std::memcpy(out + i, ta, static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <V (*kF)(V)>
void unary(float* out, const float* x, int64_t n) {
  map_row(out, x, n, kF);
}

// erf_float of erf.h lane by lane, with the same float operations (so the same results): |x| clamped below 4
// picks one of 16 intervals, whose polynomial in d = |x| - center is evaluated by fused multiply-adds; 1 from
// 4 on; x's sign; NaN stays NaN (its clamped lanes compute garbage that the last select drops).
V erf_poly(V x) {
  using namespace erf_detail;
  const V a = abs_lanes(x);
  const V clamped = min_lanes(a, splat(kLast));  // NaN lanes get kLast
  const Index i = truncate(mul(clamped, splat(kIntervalsPerUnit)));
  const V d = sub(clamped, pick(kCenter, i));
  V q = pick(kCoef[kDegree - 1], i);
  for (int k = kDegree - 2; k >= 0; --k) q = fma_exact(q, d, pick(kCoef[k], i));
  const V one = splat(1.0f);
  V y = add(pick(kHi, i), fma_exact(q, d, fma_exact(pick(kUnit, i), d, pick(kLo, i))));
  y = select(greater_equal(a, splat(4.0f)), one, min_lanes(y, one));
  return select(is_nan(x), x, or_sign(y, x));
}

void erf_polynomial(float* out, const float* x, int64_t n) { map_row(out, x, n, erf_poly); }

constexpr float kGeluBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
constexpr float kGeluKappa = 0.044715f;

void gelu(float* out, const float* x, int64_t n, bool tanh_form) {
  if (tanh_form) {
    map_row(out, x, n, [](V v) {
      V inner = mul(splat(kGeluBeta), add(v, mul(splat(kGeluKappa), mul(mul(v, v), v))));
      return mul(mul(splat(0.5f), v), add(splat(1.f), tanh_lanes(inner)));
    });
  } else {
    map_row(out, x, n, [](V v) {
      return mul(mul(v, splat(0.5f)), add(splat(1.f), erf_poly(mul(v, splat(static_cast<float>(M_SQRT1_2))))));
    });
  }
}

void gelu_backward(float* out, const float* grad, const float* x, int64_t n, bool tanh_form) {
  if (tanh_form) {
    map_row(out, grad, x, n, [](V g, V v) {
      V v_sq = mul(v, v);
      V t = tanh_lanes(mul(splat(kGeluBeta), add(v, mul(splat(kGeluKappa), mul(v_sq, v)))));
      V left = mul(splat(0.5f), v), right = add(splat(1.f), t);
      V right_derivative = mul(mul(mul(left, sub(splat(1.f), mul(t, t))), splat(kGeluBeta)),
                               add(splat(1.f), mul(splat(3.f * kGeluKappa), v_sq)));
      return mul(g, add(mul(splat(0.5f), right), right_derivative));
    });
  } else {
    map_row(out, grad, x, n, [](V g, V v) {
      V cdf = mul(splat(0.5f), add(splat(1.f), erf_poly(mul(v, splat(static_cast<float>(M_SQRT1_2))))));
      V pdf = mul(splat(static_cast<float>(M_2_SQRTPI * M_SQRT1_2 * 0.5)), exp_lanes(mul(mul(v, v), splat(-0.5f))));
      return mul(g, add(cdf, mul(v, pdf)));
    });
  }
}

void silu(float* out, const float* x, int64_t n) {
  map_row(out, x, n, [](V v) { return div(v, add(splat(1.f), exp_lanes(sub(splat(0.f), v)))); });
}

void silu_backward(float* out, const float* grad, const float* x, int64_t n) {
  map_row(out, grad, x, n, [](V g, V v) {
    V s = div(splat(1.f), add(splat(1.f), exp_lanes(sub(splat(0.f), v))));
    return mul(mul(g, s), add(splat(1.f), mul(v, sub(splat(1.f), s))));
  });
}

void softplus(float* out, const float* x, int64_t n, float beta, float threshold) {
  map_row(out, x, n, [beta, threshold](V v) {
    V t = mul(v, splat(beta));
    return select(greater(t, splat(threshold)), v, div(log1p_lanes(exp_lanes(t)), splat(beta)));
  });
}

void softplus_backward(float* out, const float* grad, const float* x, int64_t n, float beta, float threshold) {
  map_row(out, grad, x, n, [beta, threshold](V g, V v) {
    V t = mul(v, splat(beta));
    V z = exp_lanes(t);
    return select(greater(t, splat(threshold)), g, div(mul(g, z), add(z, splat(1.f))));
  });
}

void elu(float* out, const float* x, int64_t n, float alpha) {
  map_row(out, x, n, [alpha](V v) { return select(less_equal(v, splat(0.f)), mul(expm1_lanes(v), splat(alpha)), v); });
}

#if defined(__AVX512F__)
void float16_to_float(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  // The maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized (its bug 105593).
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i,
                     _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  float16_to_float_scalar(in + i, out + i, n - i);
}
void float_to_float16(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_maskz_cvtps_ph(kAll, _mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  float_to_float16_scalar(in + i, out + i, n - i);
}
#elif defined(__AVX2__)
void float16_to_float(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  float16_to_float_scalar(in + i, out + i, n - i);
}
void float_to_float16(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  float_to_float16_scalar(in + i, out + i, n - i);
}
#else
void float16_to_float(const uint16_t* in, float* out, int64_t n) { float16_to_float_scalar(in, out, n); }
void float_to_float16(const float* in, uint16_t* out, int64_t n) { float_to_float16_scalar(in, out, n); }
#endif

// bfloat16 is the top half of a float32: plain integer loops, which the compiler vectorises for each build.
void bfloat16_to_float(const uint16_t* in, float* out, int64_t n);
void float_to_bfloat16(const float* in, uint16_t* out, int64_t n);

inline float bfloat16_value(uint16_t h) { return __builtin_bit_cast(float, static_cast<uint32_t>(h) << 16); }
inline uint16_t bfloat16_bits(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u : rounded);
}

// One pass per element (convert, op, round), which each build vectorises whole.
template <typename Op>
void bfloat16_binary(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_bits(Op()(bfloat16_value(a[i]), bfloat16_value(b[i])));
}
struct AddOp { float operator()(float a, float b) const { return a + b; } };
struct SubOp { float operator()(float a, float b) const { return a - b; } };
struct MulOp { float operator()(float a, float b) const { return a * b; } };
struct DivOp { float operator()(float a, float b) const { return a / b; } };

void bfloat16_to_float(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_value(in[i]);
}
void float_to_bfloat16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_bits(in[i]);
}

// The reductions keep kAcc independent vector accumulators (a floating sum is vectorised only by hand:
// the compiler may not reassociate it), summed in a fixed order at the end. The baseline build's four
// scalar accumulators are row_math.h's generic loops.
constexpr int kAcc = kLanes == 1 ? 4 : 2;

/** acc[k] = step(acc[k], x) over x's vectors; a last partial vector is padded with pad. */
template <int K, typename Step>
void accumulate(V (&acc)[K], const float* x, int64_t n, float pad, const Step& step) {
  int64_t i = 0;
  for (; i + K * kLanes <= n; i += K * kLanes)
    for (int k = 0; k < K; ++k) acc[k] = step(acc[k], load(x + i + k * kLanes));
  for (; i + kLanes <= n; i += kLanes) acc[0] = step(acc[0], load(x + i));
  if (i < n) {
    alignas(64) float t[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) t[j] = i + j < n ? x[i + j] : pad;
    acc[0] = step(acc[0], load(t));
  }
}

template <int K>
float combine_sums(const V (&acc)[K]) {
  if constexpr (K == 4) return lanes_sum(add(add(acc[0], acc[1]), add(acc[2], acc[3])));
  else if constexpr (K == 2) return lanes_sum(add(acc[0], acc[1]));
  else return lanes_sum(acc[0]);
}

float row_max(const float* x, int64_t n) {
  const float inf = __builtin_inff();
  V acc[1] = {splat(-inf)};
  accumulate(acc, x, n, -inf, [](V m, V v) { return max_lanes(m, v); });
  return lanes_max(acc[0]);
}

float row_sum(const float* x, int64_t n) {
  V acc[kAcc];
  for (V& a : acc) a = splat(0.f);
  accumulate(acc, x, n, 0.f, [](V s, V v) { return add(s, v); });
  return combine_sums(acc);
}

float row_dot(const float* a, const float* b, int64_t n) {
  V acc[kAcc];
  for (V& s : acc) s = splat(0.f);
  int64_t i = 0;
  for (; i + kAcc * kLanes <= n; i += kAcc * kLanes)
    for (int k = 0; k < kAcc; ++k) acc[k] = mul_add(load(a + i + k * kLanes), load(b + i + k * kLanes), acc[k]);
  for (; i + kLanes <= n; i += kLanes) acc[0] = mul_add(load(a + i), load(b + i), acc[0]);
  if (i < n) {
    alignas(64) float ta[kLanes] = {}, tb[kLanes] = {};
    std::memcpy(ta, a + i, static_cast<size_t>(n - i) * sizeof(float));
    std::memcpy(tb, b + i, static_cast<size_t>(n - i) * sizeof(float));
    acc[0] = mul_add(load(ta), load(tb), acc[0]);
  }
  return combine_sums(acc);
}

float row_centered_squares(const float* x, float mean, int64_t n) {
  const V m = splat(mean);
  // One vector accumulator (four in the baseline build, as row_math.h's loop); padding with the mean adds 0.
  constexpr int kSquaresAcc = kLanes == 1 ? 4 : 1;
  V acc[kSquaresAcc];
  for (V& a : acc) a = splat(0.f);
  accumulate(acc, x, n, mean, [m](V s, V v) {
    V d = sub(v, m);
    return mul_add(d, d, s);
  });
  return combine_sums(acc);
}

float row_exp_sum(const float* x, float m, float* out, int64_t n) {
  if constexpr (kLanes == 1) {
    double s = 0;  // one running sum: in double, so a long row loses no digits to it
    for (int64_t i = 0; i < n; ++i) {
      float e = expf(x[i] - m);
      if (out) out[i] = e;
      s += static_cast<double>(e);
    }
    return static_cast<float>(s);
  } else {
    const V vm = splat(m);
    V s = splat(0.f);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      V e = exp_lanes(sub(load(x + i), vm));
      if (out) store(out + i, e);
      s = add(s, e);
    }
    if (i < n) {
      alignas(64) float t[kLanes] = {};
      std::memcpy(t, x + i, static_cast<size_t>(n - i) * sizeof(float));
      store(t, exp_lanes(sub(load(t), vm)));
      for (int64_t j = n - i; j < kLanes; ++j) t[j] = 0.f;  // the padding adds nothing to the sum
      if (out) std::memcpy(out + i, t, static_cast<size_t>(n - i) * sizeof(float));
      s = add(s, load(t));
    }
    return lanes_sum(s);
  }
}

// reduce.cpp's cascade on 16-float lanes, and var's moments on 8-double lanes, on vectors of the build's own
// width (kParts of them per lane group): GCC lowers vectors wider than its registers through the stack. The
// lanes are added one by one and combined in lane order at the end, so every build gives the same bits (no
// product to fuse in a sum).
constexpr int kVecBytes = kLanes == 16 ? 64 : kLanes == 8 ? 32 : 16;
constexpr int kParts = 64 / kVecBytes;
typedef float FN __attribute__((vector_size(kVecBytes)));
typedef double DN __attribute__((vector_size(kVecBytes)));
typedef float FH __attribute__((vector_size(kVecBytes / 2)));
constexpr int64_t kW = 16;                         // float lanes of one cascade accumulator
constexpr int kFloatsPerPart = kVecBytes / 4;
constexpr int kDoublesPerPart = kVecBytes / 8;

/** Four 16-float accumulators, each as kParts vectors. */
struct Acc4 {
  FN v[4][kParts] = {};
  void add(const Acc4& o) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
#pragma GCC unroll 4
      for (int q = 0; q < kParts; ++q) v[k][q] += o.v[k][q];
  }
  void load_add(const float* p) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
#pragma GCC unroll 4
      for (int q = 0; q < kParts; ++q) {
        FN x;
        std::memcpy(&x, p + k * kW + q * kFloatsPerPart, sizeof(FN));
        v[k][q] += x;
      }
  }
};

float sum_cascade(const float* p, int64_t n, int64_t block, int cascade) {
  if (n < 4 * kW) {
    float a = 0.0f;
    for (int64_t i = 0; i < n; ++i) a += p[i];
    return a;
  }
  const int64_t body = n - n % (4 * kW);
  int64_t i = 0;
  Acc4 r;
  if (body <= block) {  // one block: no levels
    for (; i < body; i += 4 * kW) r.load_add(p + i);
  } else {
    Acc4 b, c, d;  // level 1: sums of blocks; level 2: sums of `cascade` level-1 sums; level 3: the rest
    int blocks = 0, groups = 0;
    while (i < body) {
      Acc4 a;
      const int64_t end = body < i + block ? body : i + block;
      for (; i < end; i += 4 * kW) a.load_add(p + i);
      b.add(a);
      if (++blocks == cascade) {
        c.add(b);
        b = Acc4{};
        blocks = 0;
        if (++groups == cascade) {
          d.add(c);
          c = Acc4{};
          groups = 0;
        }
      }
    }
    // r = (d + c) + b, lane by lane.
    r = d;
    r.add(c);
    r.add(b);
  }
  float lanes[kW];
  for (int q = 0; q < kParts; ++q) {
    const FN all = (r.v[0][q] + r.v[1][q]) + (r.v[2][q] + r.v[3][q]);
    std::memcpy(lanes + q * kFloatsPerPart, &all, sizeof(FN));
  }
  for (int64_t w = kW / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) lanes[k] += lanes[k + w];
  float tail = 0.0f;
  for (; i < n; ++i) tail += p[i];
  return lanes[0] + tail;
}

float sum_bfloat16_lanes(const uint16_t* p, int64_t n) {
  constexpr int64_t L = 64;
  auto load = [p](int64_t i) { return __builtin_bit_cast(float, static_cast<uint32_t>(p[i]) << 16); };
  if (n < L) {
    float a = 0.0f;
    for (int64_t i = 0; i < n; ++i) a += load(i);
    return a;
  }
  float acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int64_t k = 0; k < L; ++k) acc[k] += load(i + k);
  float tail = 0.0f;
  for (; i < n; ++i) tail += load(i);
  for (int64_t w = L / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0] + tail;
}

double moment_sum(const float* p, int64_t n, double mean, bool square) {
  int64_t i = 0;
  double total = 0;
  if (n >= 32) {
    const DN m = DN{} + mean;
    DN a[4][kParts] = {};
    for (; i + 32 <= n; i += 32) {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
#pragma GCC unroll 4
        for (int q = 0; q < kParts; ++q) {
          FH f;
          std::memcpy(&f, p + i + 8 * k + kDoublesPerPart * q, sizeof(FH));
          DN v = __builtin_convertvector(f, DN);
          if (square) {
            v -= m;
            a[k][q] += v * v;
          } else {
            a[k][q] += v;
          }
        }
      }
    }
    for (int q = 0; q < kParts; ++q) {
      const DN all = (a[0][q] + a[1][q]) + (a[2][q] + a[3][q]);
      for (int l = 0; l < kDoublesPerPart; ++l) total += all[l];
    }
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    total += square ? (v - mean) * (v - mean) : v;
  }
  return total;
}

// The optimizer rows: each product that a sum or difference reads passes through rounded(), which the
// compiler cannot see into, so no build contracts the two into one multiply-add (the scalar loop and the eager
// optimizer round twice).
inline V rounded(V v) {
  asm("" : "+v"(v));
  return v;
}

/** f over n elements of kIn inputs and kOut outputs (a null input reads 0, a null output is skipped), in whole
 * vectors; the last n % kLanes through f on padded copies. */
template <int kIn, int kOut, typename F>
void vector_row(float* const (&out)[kOut], const float* const (&in)[kIn], int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V x[kIn], y[kOut];
    for (int k = 0; k < kIn; ++k) x[k] = in[k] ? load(in[k] + i) : splat(0.0f);
    f(x, y);
    for (int k = 0; k < kOut; ++k)
      if (out[k]) store(out[k] + i, y[k]);
  }
  if (i == n) return;
  alignas(64) float t[kIn > kOut ? kIn : kOut][kLanes] = {};
  const size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
  V x[kIn], y[kOut];
  for (int k = 0; k < kIn; ++k) {
    if (in[k]) std::memcpy(t[k], in[k] + i, bytes);
    x[k] = load(t[k]);
  }
  f(x, y);
  for (int k = 0; k < kOut; ++k)
    if (out[k]) {
      store(t[k], y[k]);
      std::memcpy(out[k] + i, t[k], bytes);
    }
}

void adam(float* param_out, float* exp_avg_out, float* exp_avg_sq_out, const float* param, const float* grad,
          const float* exp_avg, const float* exp_avg_sq, int64_t n, const AdamRowArgs& a) {
  const V decay = splat(a.decay), wd = splat(a.weight_decay), b2 = splat(a.beta2), omb2 = splat(a.one_minus_beta2);
  const V bc2 = splat(a.bias_correction2_sqrt), eps = splat(a.eps), nss = splat(a.neg_step_size);
  const V w = splat(a.lerp_weight);
  float* const out[3] = {param_out, exp_avg_out, exp_avg_sq_out};
  const float* const in[4] = {param, grad, exp_avg, exp_avg_sq};
  vector_row<4, 3>(out, in, n, [&](const V* x, V* y) {
    V p = x[0], g = x[1];
    if (a.maximize) g = neg_lanes(g);
    if (a.has_weight_decay) {
      if (a.decoupled) p = mul(p, decay);
      else g = add(g, rounded(mul(p, wd)));
    }
    const V d = sub(g, x[2]);
    const V m = a.lerp_low ? add(x[2], rounded(mul(d, w))) : sub(g, rounded(mul(d, w)));
    const V v = add(rounded(mul(x[3], b2)), rounded(mul(mul(g, omb2), g)));
    const V denom = add(div(sqrt_lanes(v), bc2), eps);
    y[0] = add(p, rounded(mul(div(m, denom), nss)));
    y[1] = m;
    y[2] = v;
  });
}

void sgd(float* param_out, float* buf_out, const float* param, const float* grad, const float* buf, int64_t n,
         const SgdRowArgs& a) {
  const V wd = splat(a.weight_decay), mom = splat(a.momentum), keep = splat(a.keep), neg_lr = splat(a.neg_lr);
  float* const out[2] = {param_out, buf_out};
  const float* const in[3] = {param, grad, buf};
  vector_row<3, 2>(out, in, n, [&](const V* x, V* y) {
    const V p = x[0];
    V g = x[1];
    if (a.maximize) g = neg_lanes(g);
    if (a.has_weight_decay) g = add(g, rounded(mul(p, wd)));
    if (a.has_momentum) {
      const V b = a.first ? g : add(rounded(mul(x[2], mom)), rounded(mul(g, keep)));
      g = a.nesterov ? add(g, rounded(mul(b, mom))) : b;
      y[1] = b;
    } else {
      y[1] = g;
    }
    y[0] = add(p, rounded(mul(g, neg_lr)));
  });
}

// Rows of layer_norm and layer_norm_backward (norm.cpp, Note [Layer norm statistics]); w and b may be null.
void layer_norm(float* y, const float* x, const float* w, const float* b, float mean, float rstd, int64_t n) {
  const V m = splat(mean), rs = splat(rstd);
  float* const out[1] = {y};
  const float* const in[3] = {x, w, b};
  vector_row<3, 1>(out, in, n, [&](const V* v, V* r) {
    V xhat = mul(sub(v[0], m), rs);
    if (w) xhat = mul(xhat, v[1]);
    r[0] = b ? add(xhat, v[2]) : xhat;
  });
}

// Two sweeps, nothing kept between them: the first adds g * xhat and g into dw and db and sums gw = g * w and
// gw * xhat, the second writes dx from those sums.
void layer_norm_backward(float* dx, float* dw, float* db, const float* g, const float* x, const float* w,
                         float mean, float rstd, int64_t n) {
  const V m = splat(mean), rs = splat(rstd);
  V sum_gw = splat(0.f), sum_gwx = splat(0.f);  // a padded tail adds 0: its g is 0
  float* const sums_out[2] = {dw, db};
  const float* const sums_in[5] = {g, x, w, dw, db};
  vector_row<5, 2>(sums_out, sums_in, n, [&](const V* v, V* r) {
    const V xhat = mul(sub(v[1], m), rs), gw = w ? mul(v[0], v[2]) : v[0];
    r[0] = mul_add(v[0], xhat, v[3]);
    r[1] = add(v[4], v[0]);
    sum_gw = add(sum_gw, gw);
    sum_gwx = mul_add(gw, xhat, sum_gwx);
  });
  const float inv_n = n ? 1.f / static_cast<float>(n) : 0.f;
  const V c1 = splat(lanes_sum(sum_gw) * inv_n), c2 = splat(lanes_sum(sum_gwx) * inv_n);
  float* const dx_out[1] = {dx};
  const float* const dx_in[3] = {g, x, w};
  vector_row<3, 1>(dx_out, dx_in, n, [&](const V* v, V* r) {
    const V xhat = mul(sub(v[1], m), rs), gw = w ? mul(v[0], v[2]) : v[0];
    r[0] = mul(rs, sub(sub(gw, c1), mul(xhat, c2)));
  });
}

}  // namespace

const RowKernels kRowKernels{
    RILL_ISA_NAME,
    add_row,
    sub_row,
    mul_row,
    div_row,
    {unary<exp_lanes>, unary<log_lanes>, unary<tanh_lanes>, unary<log1p_lanes>, unary<expm1_lanes>,
     unary<sin_lanes>, unary<cos_lanes>, unary<erf_libm_lanes>},
    erf_polynomial,
    gelu,
    gelu_backward,
    silu,
    silu_backward,
    softplus,
    softplus_backward,
    elu,
    float16_to_float,
    float_to_float16,
    bfloat16_to_float,
    float_to_bfloat16,
    bfloat16_binary<AddOp>,
    bfloat16_binary<SubOp>,
    bfloat16_binary<MulOp>,
    bfloat16_binary<DivOp>,
    {select_row<uint32_t, false, false>, select_row<uint32_t, true, false>, select_row<uint32_t, false, true>,
     select_row<uint32_t, true, true>},
    {select_row<uint64_t, false, false>, select_row<uint64_t, true, false>, select_row<uint64_t, false, true>,
     select_row<uint64_t, true, true>},
    row_max,
    row_sum,
    row_dot,
    row_centered_squares,
    row_exp_sum,
    sum_cascade,
    sum_bfloat16_lanes,
    moment_sum,
    adam,
    sgd,
    layer_norm,
    layer_norm_backward,
};

}  // namespace rill::cpu::RILL_ISA_NS
