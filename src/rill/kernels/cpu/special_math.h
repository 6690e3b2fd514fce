// Scalar special functions in double precision, for the kernels of
// ops/special.cpp (kernels/cpu/special.cpp computes every floating dtype
// through them and rounds once). The methods are textbook ones:
// - gamma family: digamma and trigamma by reflection, upward recurrence and the
//   asymptotic (Stirling) series; polygamma(n >= 2) from the Hurwitz zeta
//   function, summed directly up to q + N >= 9 and finished by Euler-Maclaurin;
//   the incomplete gamma ratios by their power series (x < a + 1) or their
//   continued fraction (Lentz's method).
// - erfinv, ndtri: a starting guess (Giles' single-precision polynomial; the
//   Abramowitz-Stegun 26.2.23 rational) refined by Newton steps on erf/erfc or
//   the normal CDF, on the tail that keeps relative accuracy.
// - Bessel: power series near 0; for J, Y the Hankel asymptotic expansion past
//   17; for I the large-argument expansion past 30; for K the series up to 2 and
//   then the integral K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt by the
//   trapezoidal rule (exponentially accurate for this analytic, fast-decaying
//   integrand). Airy Ai: Maclaurin series on [-9, 1], K_{1/3} above, and the
//   oscillatory asymptotic expansion below -9.
// - orthogonal polynomials: their three-term recurrences in n.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace rill::cpu::special {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kEulerGamma = 0.57721566490153286061;
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kEps = 1e-17;

// --- gamma family ---------------------------------------------------------------------------------------------

/** psi(x) = d/dx log Gamma(x); +-inf at 0 (the sign of -x), NaN at negative integers. */
inline double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::copysign(kInf, -x);
  if (x < 0) {
    if (x == std::trunc(x)) return kNaN;
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), with tan of the fractional part for accuracy.
    const double r = x - std::trunc(x);
    return digamma(1 - x) - kPi / std::tan(kPi * r);
  }
  if (x == kInf) return x;
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  const double series =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 -
                                                                                               z / 12))))));
  return result + std::log(x) - 0.5 / x - series;
}

/** psi'(x). single: sin(pi x) of the reflection in float, as PyTorch computes float tensors (at a negative integer
 * the value is pi^2 over the square of that rounding, not the pole). */
inline double trigamma(double x, bool single = false) {
  if (std::isnan(x)) return x;
  if (x < 0.5) {
    // Reflection: psi'(x) + psi'(1 - x) = pi^2 / sin^2(pi x). As in PyTorch, sin(pi x) of a negative integer is
    // the rounding of pi x (a large finite value rather than the pole), and -inf gives NaN.
    const double s = single ? double(std::sin(float(kPi) * float(x))) : std::sin(kPi * x);
    return kPi * kPi / (s * s) - trigamma(1 - x, single);
  }
  if (x == kInf) return 0;
  double result = 0;
  while (x < 10) {
    result += 1 / (x * x);
    x += 1;
  }
  const double z = 1 / (x * x);
  const double series =
      1 + 0.5 / x +
      z * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * (5.0 / 66 - z * (691.0 / 2730 -
                                                                                           z * 7.0 / 6))))));
  return result + series / x;
}

/** The Hurwitz zeta function sum_{k >= 0} (q + k)^-s (s > 1; inf at s == 1 and at q a non-positive integer). */
inline double zeta(double s, double q) {
  // The special cases in PyTorch's order (zeta(1, NaN) and zeta(NaN, -3) are inf there).
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return kNaN;  // (q + k)^-s of a negative base
  }
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  // PyTorch's values at the infinities (NaN where its sum meets inf - inf).
  if (s == kInf) return q < 1 ? kInf : (q == 1 ? 1.0 : kNaN);
  if (q == kInf) return kNaN;
  // The terms before q + N >= 9 (and >= s / 2, so that the correction below converges), directly; stop once the
  // rest is negligible (the tail after a term t at a is below t (1 + a / (s - 1))).
  double sum = 0, a = q;
  while (a < 9 || a < 0.5 * s) {
    const double t = std::pow(a, -s);
    sum += t;
    a += 1;
    if (a > 0 && std::abs(t) * (1 + a / (s - 1)) <= kEps * std::abs(sum)) return sum;
  }
  // Euler-Maclaurin from w = a: w^(1-s) / (s - 1) + w^-s / 2 + sum_j B_2j / (2j)! (s)_(2j-1) w^(-s-2j+1).
  static constexpr double kB2jOverFactorial[] = {
      1.0 / 12,
      -1.0 / 720,
      1.0 / 30240,
      -1.0 / 1209600,
      1.0 / 47900160,
      (-691.0 / 2730) / 479001600.0,
      (7.0 / 6) / 87178291200.0,
      (-3617.0 / 510) / 20922789888000.0,
      (43867.0 / 798) / 6402373705728000.0,
      (-174611.0 / 330) / 2432902008176640000.0,
      (854513.0 / 138) / 1124000727777607680000.0,
      (-236364091.0 / 2730) / 620448401733239439360000.0,
  };
  const double w = a, t = std::pow(w, -s);
  sum += w * t / (s - 1) + 0.5 * t;
  double factor = s * t / w;  // (s)_1 w^(-s-1)
  for (int j = 0; j < 12; ++j) {
    const double term = kB2jOverFactorial[j] * factor;
    sum += term;
    if (std::abs(term) <= kEps * std::abs(sum)) break;
    factor *= (s + 2 * j + 1) * (s + 2 * j + 2) / (w * w);
  }
  return sum;
}

/** The n-th derivative of digamma. */
inline double polygamma(int64_t n, double x, bool single = false) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x, single);
  const double sign = (n % 2 == 1) ? 1.0 : -1.0;  // (-1)^(n+1)
  return sign * std::exp(std::lgamma(static_cast<double>(n) + 1)) * zeta(static_cast<double>(n) + 1, x);
}

/** The regularised lower incomplete gamma function P(a, x), or the upper one Q(a, x) = 1 - P when upper. */
inline double incomplete_gamma(double a, double x, bool upper) {
  // The special cases in PyTorch's order (so x == 0 gives P = 0 even for a NaN a, and an infinite a P = 0 for
  // a NaN x).
  if (a < 0 || x < 0) return kNaN;
  double p;
  if (a == 0) {
    if (!(x > 0)) return kNaN;
    p = 1;
  } else if (x == 0) {
    p = 0;
  } else if (std::isinf(a)) {
    if (std::isinf(x)) return kNaN;
    p = 0;
  } else if (std::isinf(x)) {
    p = 1;
  } else if (std::isnan(a) || std::isnan(x)) {
    return kNaN;
  } else if (x < a + 1) {
    // P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
    double term = 1, sum = 1;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term <= kEps * sum) break;
    }
    p = std::exp(a * std::log(x) - x - std::lgamma(a + 1)) * sum;
    return upper ? 1 - p : p;
  } else {
    // Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))
    constexpr double kTiny = 1e-300;
    double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
    for (int i = 1; i < 100000; ++i) {
      const double an = -i * (i - a);
      b += 2;
      d = an * d + b;
      if (std::abs(d) < kTiny) d = kTiny;
      c = b + an / c;
      if (std::abs(c) < kTiny) c = kTiny;
      d = 1 / d;
      const double delta = d * c;
      h *= delta;
      if (std::abs(delta - 1) <= 1e-16) break;
    }
    const double q = std::exp(a * std::log(x) - x - std::lgamma(a)) * h;
    return upper ? q : 1 - q;
  }
  return upper ? 1 - p : p;
}

// --- the error function's relatives ---------------------------------------------------------------------------

/** exp(x^2), with the rounding error of x^2 folded back in. */
inline double exp_x2(double x) {
  const double hi = x * x, lo = std::fma(x, x, -hi);
  return std::exp(hi) * (1 + lo);
}

/** exp(x^2) erfc(x). */
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) {
    if (x < -26.7) return kInf;
    return 2 * exp_x2(x) - erfcx(-x);
  }
  if (x < 26) return exp_x2(x) * std::erfc(x);
  if (x == kInf) return 0;
  // erfc(x) e^(x^2) ~ 1 / (x sqrt(pi)) sum_n (-1)^n (2n - 1)!! / (2 x^2)^n
  const double z = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int n = 1; n < 30; ++n) {
    term *= -(2 * n - 1) * z;
    sum += term;
    if (std::abs(term) <= kEps) break;
  }
  return sum / (x * std::sqrt(kPi));
}

/** The normal CDF. */
inline double ndtr(double x) { return 0.5 * std::erfc(-x * M_SQRT1_2); }

/** log of the normal CDF, accurate in both tails. */
inline double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  const double t = x * M_SQRT1_2;
  if (x < -1) return std::log(0.5 * erfcx(-t)) - t * t;
  return std::log1p(-0.5 * std::erfc(t));
}

/** The inverse of erf on [-1, 1]. */
inline double erfinv(double y) {
  if (std::isnan(y)) return y;
  if (y <= -1 || y >= 1) return (y == 1 || y == -1) ? std::copysign(kInf, y) : kNaN;
  const double sign = y < 0 ? -1.0 : 1.0;
  y = std::abs(y);
  const double tail = 1 - y;  // exact for y >= 0.5
  double w = -std::log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    // erfc(x) ~ exp(-x^2) / (x sqrt(pi)): two fixed-point steps of x^2 = -log(tail) - log(x sqrt(pi)).
    const double l = -std::log(tail);
    x = std::sqrt(l);
    for (int i = 0; i < 2; ++i) x = std::sqrt(l - std::log(x * std::sqrt(kPi)));
  }
  // Newton on erf(x) - y, written as tail - erfc(x) away from 0 so that it keeps relative accuracy near 1.
  for (int i = 0; i < 6; ++i) {
    const double f = y < 0.5 ? std::erf(x) - y : tail - std::erfc(x);
    const double step = f / (M_2_SQRTPI * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-16 * std::abs(x)) break;
  }
  return sign * x;
}

/** The inverse of the normal CDF on [0, 1]. */
inline double ndtri(double p) {
  if (std::isnan(p)) return p;
  if (p <= 0 || p >= 1) return p == 0 ? -kInf : (p == 1 ? kInf : kNaN);
  if (p > 0.5) return -ndtri(1 - p);  // 1 - p is exact here
  // Near the middle, sqrt(2) erfinv(2p - 1) (2p - 1 exact for p >= 0.25) keeps relative accuracy as x -> 0.
  if (p >= 0.25) return M_SQRT2 * erfinv(2 * p - 1);
  // Abramowitz and Stegun 26.2.23 (error below 4.5e-4), then Newton on ndtr(x) - p.
  const double t = std::sqrt(-2 * std::log(p));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 8; ++i) {
    const double density = std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
    const double step = (ndtr(x) - p) / density;
    x -= step;
    if (std::abs(step) <= 1e-16 * std::abs(x)) break;
  }
  return x;
}

// --- Bessel and Airy functions --------------------------------------------------------------------------------

/** I_nu(x) for nu in {0, 1} and x >= 0, times exp(-x) when scaled. */
inline double bessel_i(int nu, double x, bool scaled) {
  if (x <= 30) {
    const double q = x * x / 4;
    double term = nu == 0 ? 1.0 : x / 2, sum = term;
    for (int k = 1; k < 500; ++k) {
      term *= q / (k * (k + nu));
      sum += term;
      if (term <= kEps * sum) break;
    }
    return scaled ? sum * std::exp(-x) : sum;
  }
  if (x == kInf) return scaled ? 0.0 : kNaN;  // PyTorch's I0(inf), I1(inf) are NaN
  // I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 200; ++k) {
    const double next = term * -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (std::abs(next) >= std::abs(term)) break;
    term = next;
    sum += term;
    if (std::abs(term) <= kEps * std::abs(sum)) break;
  }
  return scaled ? sum / std::sqrt(2 * kPi * x) : std::exp(x - 0.5 * std::log(2 * kPi * x)) * sum;
}

/** exp(x) K_nu(x) for x > 0, by the trapezoidal rule on int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt. */
inline double bessel_k_scaled_integral(double nu, double x) {
  const double h = std::min(0.2, 0.5 / std::sqrt(x));
  double sum = 0.5;  // the t = 0 end
  for (int k = 1; k < 100000; ++k) {
    const double t = k * h, s = std::sinh(0.5 * t);
    const double f = std::exp(-2 * x * s * s) * std::cosh(nu * t);
    sum += f;
    if (f <= kEps * sum) break;
  }
  return h * sum;
}

/** K_nu(x) for nu in {0, 1} (NaN below 0, inf at 0), times exp(x) when scaled. */
inline double bessel_k(int nu, double x, bool scaled) {
  if (std::isnan(x)) return x;
  if (x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x == kInf) return 0;
  if (x > 2) {
    const double e = bessel_k_scaled_integral(nu, x);
    return scaled ? e : e * std::exp(-x);
  }
  const double q = x * x / 4, log_half = std::log(x / 2);
  double k;
  if (nu == 0) {
    // K0 = -(log(x / 2) + gamma) I0(x) + sum_{k >= 1} H_k q^k / (k!)^2
    double term = 1, harmonic = 0, sum = 0;
    for (int j = 1; j < 100; ++j) {
      term *= q / (static_cast<double>(j) * j);
      harmonic += 1.0 / j;
      sum += harmonic * term;
      if (harmonic * term <= kEps * std::abs(sum)) break;
    }
    k = -(log_half + kEulerGamma) * bessel_i(0, x, false) + sum;
  } else {
    // K1 = 1 / x + log(x / 2) I1(x) - x / 4 sum_{k >= 0} (psi(k + 1) + psi(k + 2)) q^k / (k! (k + 1)!)
    double term = 1, psi_k1 = -kEulerGamma, psi_k2 = 1 - kEulerGamma, sum = psi_k1 + psi_k2;
    for (int j = 1; j < 100; ++j) {
      term *= q / (static_cast<double>(j) * (j + 1));
      psi_k1 += 1.0 / j;
      psi_k2 += 1.0 / (j + 1);
      const double add = (psi_k1 + psi_k2) * term;
      sum += add;
      if (std::abs(add) <= kEps * std::abs(sum)) break;
    }
    k = 1 / x + log_half * bessel_i(1, x, false) - x / 4 * sum;
  }
  return scaled ? k * std::exp(x) : k;
}

/** P and Q of the Hankel expansion of J_nu, Y_nu at x (large). */
inline void hankel_pq(double nu, double x, double& p, double& q) {
  const double mu = 4 * nu * nu;
  double term = 1;
  p = 1;
  q = 0;
  for (int k = 1; k < 200; ++k) {
    const double next = term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (std::abs(next) >= std::abs(term) && k > 2) break;
    term = next;
    // t_k enters P (k even) or Q (k odd) with the sign (-1)^floor(k / 2).
    const double signed_term = ((k / 2) % 2 == 0) ? term : -term;
    if (k % 2 == 0) p += signed_term;
    else q += signed_term;
    if (std::abs(term) <= kEps) break;
  }
}

/** J_n(x) for n in {0, 1}. */
inline double bessel_j(int n, double x) {
  if (std::isnan(x)) return x;
  const double sign = (n == 1 && x < 0) ? -1.0 : 1.0;
  x = std::abs(x);
  if (x == kInf) return kNaN;  // as PyTorch
  if (x <= 17) {
    const double q = x * x / 4;
    double term = n == 0 ? 1.0 : x / 2, sum = term;
    for (int k = 1; k < 300; ++k) {
      term *= -q / (static_cast<double>(k) * (k + n));
      sum += term;
      if (k > x && std::abs(term) <= kEps * std::abs(sum)) break;
    }
    return sign * sum;
  }
  double p, q;
  hankel_pq(n, x, p, q);
  const double c = std::cos(x), s = std::sin(x);
  // chi = x - (n / 2 + 1 / 4) pi
  const double cos_chi = n == 0 ? (c + s) * M_SQRT1_2 : (s - c) * M_SQRT1_2;
  const double sin_chi = n == 0 ? (s - c) * M_SQRT1_2 : -(s + c) * M_SQRT1_2;
  return sign * std::sqrt(2 / (kPi * x)) * (p * cos_chi - q * sin_chi);
}

/** Y_n(x) for n in {0, 1}: NaN below 0, -inf at 0. */
inline double bessel_y(int n, double x) {
  if (std::isnan(x)) return x;
  if (x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (x == kInf) return kNaN;  // as PyTorch
  if (x <= 17) {
    const double q = x * x / 4, log_half = std::log(x / 2);
    if (n == 0) {
      // Y0 = 2 / pi ((log(x / 2) + gamma) J0(x) + sum_{k >= 1} (-1)^(k+1) H_k q^k / (k!)^2)
      double term = 1, harmonic = 0, sum = 0;
      for (int k = 1; k < 300; ++k) {
        term *= -q / (static_cast<double>(k) * k);
        harmonic += 1.0 / k;
        sum -= harmonic * term;
        if (k > x && std::abs(harmonic * term) <= kEps * std::abs(sum)) break;
      }
      return 2 / kPi * ((log_half + kEulerGamma) * bessel_j(0, x) + sum);
    }
    // Y1 = -2 / (pi x) + 2 / pi log(x / 2) J1(x) - x / (2 pi) sum_{k >= 0} (psi(k+1) + psi(k+2)) (-q)^k / (k! (k+1)!)
    double term = 1, psi_k1 = -kEulerGamma, psi_k2 = 1 - kEulerGamma, sum = psi_k1 + psi_k2;
    for (int k = 1; k < 300; ++k) {
      term *= -q / (static_cast<double>(k) * (k + 1));
      psi_k1 += 1.0 / k;
      psi_k2 += 1.0 / (k + 1);
      const double add = (psi_k1 + psi_k2) * term;
      sum += add;
      if (k > x && std::abs(add) <= kEps * std::abs(sum)) break;
    }
    return -2 / (kPi * x) + 2 / kPi * log_half * bessel_j(1, x) - x / (2 * kPi) * sum;
  }
  double p, q;
  hankel_pq(n, x, p, q);
  const double c = std::cos(x), s = std::sin(x);
  const double cos_chi = n == 0 ? (c + s) * M_SQRT1_2 : (s - c) * M_SQRT1_2;
  const double sin_chi = n == 0 ? (s - c) * M_SQRT1_2 : -(s + c) * M_SQRT1_2;
  return std::sqrt(2 / (kPi * x)) * (p * sin_chi + q * cos_chi);
}

/** The Airy function Ai(x). */
inline double airy_ai(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return kNaN;  // as PyTorch
  if (x > 1) {
    // Ai(x) = sqrt(x / 3) / pi K_{1/3}(zeta), zeta = 2/3 x^(3/2)
    const double zeta = 2.0 / 3 * x * std::sqrt(x);
    return std::sqrt(x / 3) / kPi * std::exp(-zeta) * bessel_k_scaled_integral(1.0 / 3, zeta);
  }
  if (x >= -9) {
    // Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f and g the Maclaurin series of the two solutions of y'' = x y.
    constexpr double kAi0 = 0.355028053887817239260, kAiPrime0 = -0.258819403792806798405;
    const double x3 = x * x * x;
    double f = 1, g = x, tf = 1, tg = x;
    for (int k = 1; k < 200; ++k) {
      tf *= x3 / ((3.0 * k - 1) * (3.0 * k));
      tg *= x3 / ((3.0 * k) * (3.0 * k + 1));
      f += tf;
      g += tg;
      if (std::abs(tf) + std::abs(tg) <= kEps * (std::abs(f) + std::abs(g)) && k > 3) break;
    }
    return kAi0 * f + kAiPrime0 * g;
  }
  // Ai(-z) ~ (cos(zeta - pi/4) sum_k (-1)^k u_2k / zeta^2k + sin(zeta - pi/4) sum_k (-1)^k u_2k+1 / zeta^2k+1)
  //          / (sqrt(pi) z^(1/4)),  u_k = (6k - 5)(6k - 3)(6k - 1) / ((2k - 1) 216 k) u_(k-1)
  const double z = -x, zeta = 2.0 / 3 * z * std::sqrt(z);
  double u = 1, term = 1, even = 1, odd = 0;
  for (int k = 1; k < 100; ++k) {
    u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
    const double next = u / std::pow(zeta, k);
    if (next >= term && k > 2) break;
    term = next;
    const double signed_term = ((k / 2) % 2 == 0) ? term : -term;
    if (k % 2 == 0) even += signed_term;
    else odd += signed_term;
    if (term <= kEps) break;
  }
  const double c = std::cos(zeta), s = std::sin(zeta);
  return ((c + s) * M_SQRT1_2 * even + (s - c) * M_SQRT1_2 * odd) / (std::sqrt(kPi) * std::sqrt(std::sqrt(z)));
}

/** sin(x) / x, 1 at 0. */
inline double spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0;
  if (std::abs(x) < 0.5) {
    const double z = x * x;
    return 1 - z / 6 * (1 - z / 20 * (1 - z / 42 * (1 - z / 72 * (1 - z / 110 * (1 - z / 156)))));
  }
  return std::sin(x) / x;
}

// --- orthogonal polynomials (n truncated to an integer; 0 for n < 0) ------------------------------------------

/** The Chebyshev polynomials: kind 0 T, 1 U, 2 V, 3 W, by p_(k+1) = 2 x p_k - p_(k-1). */
inline double chebyshev(int kind, double x, int64_t n) {
  if (n < 0) return 0;
  if (std::abs(x) == 1) {
    const bool odd_at_minus_one = x < 0 && n % 2 == 1;
    const double ends[4][2] = {{1, 1}, {double(n + 1), double(n + 1)}, {1, double(2 * n + 1)},
                               {double(2 * n + 1), 1}};
    const double v = x > 0 ? ends[kind][0] : ends[kind][1];
    return odd_at_minus_one ? -v : v;
  }
  // High degrees inside (-1, 1): the trigonometric forms, with x = cos(theta).
  if (std::abs(x) < 1 && n > (kind == 0 ? 6 : 8)) {
    const double theta = std::acos(x), m = static_cast<double>(n);
    switch (kind) {
      case 0: return std::cos(m * theta);
      case 1: return std::sin((m + 1) * theta) / std::sin(theta);
      case 2: return std::cos((m + 0.5) * theta) / std::cos(0.5 * theta);
      default: return std::sin((m + 0.5) * theta) / std::sin(0.5 * theta);
    }
  }
  if (n == 0) return 1;
  double prev = 1, cur = kind == 0 ? x : (kind == 1 ? 2 * x : (kind == 2 ? 2 * x - 1 : 2 * x + 1));
  for (int64_t k = 1; k < n; ++k) {
    const double next = 2 * x * cur - prev;
    prev = cur;
    cur = next;
  }
  return cur;
}

/** The Hermite polynomials: physicists' H (H_(k+1) = 2x H_k - 2k H_(k-1)) or probabilists' He. */
inline double hermite(bool physicists, double x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  const double scale = physicists ? 2 : 1;
  double prev = 1, cur = scale * x;
  for (int64_t k = 1; k < n; ++k) {
    const double next = scale * (x * cur - static_cast<double>(k) * prev);
    prev = cur;
    cur = next;
  }
  return cur;
}

/** The Laguerre polynomials: (k + 1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1). */
inline double laguerre(double x, int64_t n) {
  if (n < 0) return 0;
  if (x == 0 || n == 0) return 1;
  double prev = 1, cur = 1 - x;
  for (int64_t k = 1; k < n; ++k) {
    const double kd = static_cast<double>(k);
    const double next = ((2 * kd + 1 - x) * cur - kd * prev) / (kd + 1);
    prev = cur;
    cur = next;
  }
  return cur;
}

/** The Legendre polynomials: (k + 1) P_(k+1) = (2k + 1) x P_k - k P_(k-1). */
inline double legendre(double x, int64_t n) {
  if (n < 0) return 0;
  if (std::abs(x) == 1) return (x > 0 || n % 2 == 0) ? 1 : -1;
  if (n == 0) return 1;
  double prev = 1, cur = x;
  for (int64_t k = 1; k < n; ++k) {
    const double kd = static_cast<double>(k);
    const double next = ((2 * kd + 1) * x * cur - kd * prev) / (kd + 1);
    prev = cur;
    cur = next;
  }
  return cur;
}

}  // namespace rill::cpu::special
