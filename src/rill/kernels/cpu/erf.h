// A float32 erf of rill's own, within about 1 ulp (Note [Vectorised erf]): its tables
// and the scalar form; the vector forms are rows built per instruction set
// (isa_rows.cpp, RowKernels::erf_polynomial). gelu's kernels use it (activation.cpp).
#pragma once

#include <cmath>
#include <cstdint>


namespace rill::cpu {

// Note [Vectorised erf]
// glibc's libmvec erff (_ZGVeN16v_erff) is vectorised but was most of exact
// gelu's time (libm's scalar erff, which the other layouts called, is 20x
// slower still). This one takes 384 us per 1M floats here against libmvec's 645
// (one thread, in cache; a copy takes 99), and took exact gelu from 1.3x
// PyTorch's time to 0.7x (bench/bench.py, 1M floats). It cuts |x| < 4 into 16
// intervals of width 1/4 and evaluates, on each lane's interval, a degree-6
// polynomial in d = |x| - center, its coefficients picked per lane by a permute
// (a table lookup in one instruction, as vector math libraries do); from 4 on it
// is 1 (erf(4) = 1 - 1.5e-8 rounds to 1), and the sign is x's. The polynomials
// are Chebyshev interpolants of erf computed in double precision (interval 0, on
// [0, 1/4): of erf(x) / x, so that erf(x) = x + x * (2 / sqrt(pi) - 1 + ...)
// keeps its relative accuracy down to the subnormals), within 0.05 ulp of erf.
// Rounded to float they would cost up to 2.2 ulp, mostly from the constant
// term, so it is kept as a pair hi + lo and added last: erf = hi + (lo + d * q(d))
// with one rounding inside the parentheses and one for the sum. Over every float
// the result is within 1.05 ulp of erf (checked exhaustively against double erf;
// tests/cpp/kernels/erf_test.cpp checks a sample and the special values). The
// scalar and vector forms do the same float operations (fused multiply-adds),
// so they agree bit for bit (tests/cpp/kernels/isa_test.cpp checks every build).
namespace erf_detail {

inline constexpr int kDegree = 6;
inline constexpr float kIntervalsPerUnit = 4.0f;
inline constexpr float kLast = 3.99999976f;  // the largest float below 4

/** Interval centers (interval 0's is 0: d = |x| there). */
alignas(64) inline constexpr float kCenter[16] = {0.0f,   0.375f, 0.625f, 0.875f, 1.125f, 1.375f, 1.625f, 1.875f,
                                                  2.125f, 2.375f, 2.625f, 2.875f, 3.125f, 3.375f, 3.625f, 3.875f};
/** The constant term erf(center) as hi + lo. */
alignas(64) inline constexpr float kHi[16] = {
 0.000000000e+00f, 4.041168988e-01f, 6.232408881e-01f, 7.840750813e-01f,
 8.883882165e-01f, 9.481700659e-01f, 9.784437418e-01f, 9.919900298e-01f,
 9.973459840e-01f, 9.992170334e-01f, 9.997946024e-01f, 9.999521375e-01f,
 9.999901056e-01f, 9.999982119e-01f, 9.999997020e-01f, 9.999999404e-01f
};
alignas(64) inline constexpr float kLo[16] = {
 0.000000000e+00f, 1.065451638e-08f, -5.933427083e-09f, -2.028771462e-08f,
 1.520898429e-08f, 6.904247396e-09f, -8.558142639e-09f, 2.785760067e-08f,
 -1.334221089e-08f, 2.839560054e-08f, 2.186973802e-08f, 7.690073467e-09f,
 -2.363540919e-09f, -2.714205927e-08f, 2.883040917e-09f, 1.709070396e-08f
};
/** 1 on interval 0, whose polynomial is |x| + |x| * q(|x|), else 0. */
alignas(64) inline constexpr float kUnit[16] = {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
                                                0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
/** kCoef[k - 1][i]: the coefficient of d^k on interval i (interval 0: of d^k less d). */
alignas(64) inline constexpr float kCoef[kDegree][16] = {
    {
     1.283791661e-01f, 9.803528190e-01f, 7.634995580e-01f, 5.247450471e-01f,
     3.182739615e-01f, 1.703597754e-01f, 8.047225326e-02f, 3.354582563e-02f,
     1.234081946e-02f, 4.006478004e-03f, 1.147875446e-03f, 2.902284905e-04f,
     6.475879491e-05f, 1.275178329e-05f, 2.215933591e-06f, 3.398257888e-07f
    },
    {
     -8.539025202e-07f, -3.676322997e-01f, -4.771872163e-01f, -4.591519237e-01f,
     -3.580582142e-01f, -2.342446893e-01f, -1.307674199e-01f, -6.289842725e-02f,
     -2.622424252e-02f, -9.515384212e-03f, -3.013172187e-03f, -8.344064699e-04f,
     -2.023709967e-04f, -4.303717651e-05f, -8.032729966e-06f, -1.316817361e-06f
    },
    {
     -3.760863245e-01f, -2.348750234e-01f, -5.567479134e-02f, 9.291964769e-02f,
     1.624502838e-01f, 1.579380035e-01f, 1.148419306e-01f, 6.744214147e-02f,
     3.303780779e-02f, 1.373050921e-02f, 4.890281707e-03f, 1.502423198e-03f,
     3.999627079e-04f, 9.256100020e-05f, 1.866695493e-05f, 3.286753326e-06f
    },
    {
     -6.887257914e-04f, 1.665799767e-01f, 1.764578223e-01f, 1.123971194e-01f,
     2.797512710e-02f, -3.049931303e-02f, -4.971868545e-02f, -4.226031527e-02f,
     -2.636124939e-02f, -1.313339546e-02f, -5.414305255e-03f, -1.881718985e-03f,
     -5.575400428e-04f, -1.418712491e-04f, -3.116243533e-05f, -5.930714906e-06f
    },
    {
     1.182095408e-01f, 4.532615095e-02f, -2.703504823e-02f, -6.670918316e-02f,
     -6.106119603e-02f, -3.064391576e-02f, -2.303251997e-03f, 1.132802200e-02f,
     1.244421210e-02f, 8.360578679e-03f, 4.236414097e-03f, 1.727707335e-03f,
     5.842620158e-04f, 1.665797754e-04f, 4.045959940e-05f, 8.430430171e-06f
    },
    {
     -1.944789849e-02f, -4.975650087e-02f, -4.113639519e-02f, -1.042486355e-02f,
     1.534914877e-02f, 2.202830091e-02f, 1.439652126e-02f, 4.149623215e-03f,
     -1.778267557e-03f, -3.095475258e-03f, -2.245700220e-03f, -1.144289155e-03f,
     -4.557893262e-04f, -1.481259969e-04f, -4.015918239e-05f, -9.204823982e-06f
    }
};

}  // namespace erf_detail

/** erf(x) for a float, within 1.05 ulp (Note [Vectorised erf]). */
inline float erf_float(float x) {
  using namespace erf_detail;
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  float y = 1.0f;
  if (a < 4.0f) {
    const int i = static_cast<int>(a * kIntervalsPerUnit);
    const float d = a - kCenter[i];
    float q = kCoef[kDegree - 1][i];
    for (int k = kDegree - 2; k >= 0; --k) q = std::fma(q, d, kCoef[k][i]);
    y = std::fmin(kHi[i] + std::fma(q, d, std::fma(kUnit[i], d, kLo[i])), 1.0f);
  }
  return std::copysign(y, x);
}

}  // namespace rill::cpu
