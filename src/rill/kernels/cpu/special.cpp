// CPU kernels of the special functions (ops/special.cpp). Inputs arrive converted to the compute dtype; every
// floating dtype is computed through the double-precision functions of special_math.h and rounded once
// (float16 and bfloat16 through the family's float32 loops). nextafter and frexp work on each dtype's own
// representation.
#include <cmath>
#include <cstring>
#include <string>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/special_math.h"

namespace rill::cpu {
namespace {

namespace sp = special;

// out = f(x) in double for every floating dtype.
template <typename F>
void unary_double(const KernelContext& c, const F& f) {
  visit_floating_dtype(c.inputs[0].meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0]}, [&](float a) { return float(f(double(a))); });
    } else {
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [&](T a) { return T(f(double(a))); });
    }
  });
}

template <typename F>
void binary_double(const KernelContext& c, const F& f) {
  visit_floating_dtype(c.inputs[0].meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0], &c.inputs[1]},
                      [&](float a, float b) { return float(f(double(a), double(b))); });
    } else {
      map_elements<T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]},
                            [&](T a, T b) { return T(f(double(a), double(b))); });
    }
  });
}

template <double (*F)(double)>
void unary_kernel(const KernelContext& c) {
  unary_double(c, [](double x) { return F(x); });
}

template <double (*F)(double, double)>
void binary_kernel(const KernelContext& c) {
  binary_double(c, [](double a, double b) { return F(a, b); });
}

// The polynomial of degree n (truncated toward zero, as PyTorch does) at x.
template <double (*P)(double, int64_t)>
void polynomial_kernel(const KernelContext& c) {
  binary_double(c, [](double x, double n) {
    // A NaN or out-of-range n converts to INT64_MIN on x86, as in PyTorch: a negative degree, 0.
    if (!(std::abs(n) < 9.2e18)) return 0.0;
    return P(x, static_cast<int64_t>(n));
  });
}

double lgamma_of(double x) { return std::lgamma(x); }
double i0_of(double x) { return sp::bessel_i(0, std::abs(x), false); }
double i1_of(double x) { return std::copysign(sp::bessel_i(1, std::abs(x), false), x); }
double i0e_of(double x) { return sp::bessel_i(0, std::abs(x), true); }
double i1e_of(double x) { return std::copysign(sp::bessel_i(1, std::abs(x), true), x); }
double k0_of(double x) { return sp::bessel_k(0, x, false); }
double k1_of(double x) { return sp::bessel_k(1, x, false); }
double k0e_of(double x) { return sp::bessel_k(0, x, true); }
double k1e_of(double x) { return sp::bessel_k(1, x, true); }
double j0_of(double x) { return sp::bessel_j(0, x); }
double j1_of(double x) { return sp::bessel_j(1, x); }
double y0_of(double x) { return sp::bessel_y(0, x); }
double y1_of(double x) { return sp::bessel_y(1, x); }
double igamma_of(double a, double x) { return sp::incomplete_gamma(a, x, false); }
double igammac_of(double a, double x) { return sp::incomplete_gamma(a, x, true); }

template <int kKind, bool kShifted>
double chebyshev_of(double x, int64_t n) { return sp::chebyshev(kKind, kShifted ? 2 * x - 1 : x, n); }
double hermite_h_of(double x, int64_t n) { return sp::hermite(true, x, n); }
double hermite_he_of(double x, int64_t n) { return sp::hermite(false, x, n); }

void polygamma_kernel(const KernelContext& c) {
  const int64_t n = c.attrs.get_int(0);
  const bool single = c.inputs[0].meta->dtype != DType::kFloat64;
  unary_double(c, [n, single](double x) { return sp::polygamma(n, x, single); });
}

// sum_{j < p} lgamma(x - j / 2) + p (p - 1) / 4 log(pi), defined for x > (p - 1) / 2.
void mvlgamma_kernel(const KernelContext& c) {
  const int64_t p = c.attrs.get_int(0);
  const double bound = 0.5 * static_cast<double>(p - 1);
  unary_double(c, [p, bound](double x) {
    RILL_CHECK(x > bound, Runtime, "[mvlgamma] All elements must be greater than (p-1)/2 = ", bound,
               " for p=", p, "; got ", x);
    double sum = static_cast<double>(p) * static_cast<double>(p - 1) / 4 * std::log(sp::kPi);
    for (int64_t j = 0; j < p; ++j) sum += std::lgamma(x - 0.5 * static_cast<double>(j));
    return sum;
  });
}

// nextafter of a 16-bit float, on its bits: one unit in the last place towards `to`.
template <typename T>
T nextafter_16bit(T from, T to) {
  const float a = from, b = to;
  if (a != a || b != b) return T(a + b);
  if (a == b) return to;
  T r;
  if (a == 0) {
    r.bits = static_cast<uint16_t>(b > 0 ? 1 : 0x8001);  // the smallest subnormal, of to's sign
    return r;
  }
  r.bits = static_cast<uint16_t>(((a < b) == (a > 0)) ? from.bits + 1 : from.bits - 1);
  return r;
}

void nextafter_kernel(const KernelContext& c) {
  visit_floating_dtype(c.inputs[0].meta->dtype, "nextafter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIs16BitFloat<T>) {
      map_elements<T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]},
                            [](T a, T b) { return nextafter_16bit(a, b); });
    } else {
      map_elements<T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]}, [](T a, T b) { return std::nextafter(a, b); });
    }
  });
}

void frexp_kernel(const KernelContext& c) {
  visit_floating_dtype(c.inputs[0].meta->dtype, "frexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<kIs16BitFloat<T>, float, T>;  // 16-bit values are exact in float
    map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T a) {
      int e = 0;
      return T(std::frexp(static_cast<A>(a), &e));
    });
    map_elements<int32_t, T>(c.outputs[1], {&c.inputs[0]}, [](T a) {
      int e = 0;
      std::frexp(static_cast<A>(a), &e);
      return static_cast<int32_t>(e);
    });
  });
}

}  // namespace

void register_special_kernels() {
  ops::set_cpu_kernel("digamma", unary_kernel<sp::digamma>);
  ops::set_cpu_kernel("lgamma", unary_kernel<lgamma_of>);
  ops::set_cpu_kernel("erfinv", unary_kernel<sp::erfinv>);
  ops::set_cpu_kernel("_polygamma", polygamma_kernel);
  ops::set_cpu_kernel("mvlgamma", mvlgamma_kernel);
  ops::set_cpu_kernel("igamma", binary_kernel<igamma_of>);
  ops::set_cpu_kernel("igammac", binary_kernel<igammac_of>);
  ops::set_cpu_kernel("nextafter", nextafter_kernel);
  ops::set_cpu_kernel("_frexp", frexp_kernel);
  ops::set_cpu_kernel("special_erfcx", unary_kernel<sp::erfcx>);
  ops::set_cpu_kernel("special_log_ndtr", unary_kernel<sp::log_ndtr>);
  ops::set_cpu_kernel("special_ndtri", unary_kernel<sp::ndtri>);
  ops::set_cpu_kernel("special_i1", unary_kernel<i1_of>);
  ops::set_cpu_kernel("special_i1e", unary_kernel<i1e_of>);
  ops::set_cpu_kernel("special_i0e", unary_kernel<i0e_of>);
  ops::set_cpu_kernel("special_airy_ai", unary_kernel<sp::airy_ai>);
  ops::set_cpu_kernel("special_bessel_j0", unary_kernel<j0_of>);
  ops::set_cpu_kernel("special_bessel_j1", unary_kernel<j1_of>);
  ops::set_cpu_kernel("special_bessel_y0", unary_kernel<y0_of>);
  ops::set_cpu_kernel("special_bessel_y1", unary_kernel<y1_of>);
  ops::set_cpu_kernel("special_modified_bessel_i0", unary_kernel<i0_of>);
  ops::set_cpu_kernel("special_modified_bessel_i1", unary_kernel<i1_of>);
  ops::set_cpu_kernel("special_modified_bessel_k0", unary_kernel<k0_of>);
  ops::set_cpu_kernel("special_modified_bessel_k1", unary_kernel<k1_of>);
  ops::set_cpu_kernel("special_scaled_modified_bessel_k0", unary_kernel<k0e_of>);
  ops::set_cpu_kernel("special_scaled_modified_bessel_k1", unary_kernel<k1e_of>);
  ops::set_cpu_kernel("special_spherical_bessel_j0", unary_kernel<sp::spherical_bessel_j0>);
  ops::set_cpu_kernel("special_zeta", binary_kernel<sp::zeta>);
  ops::set_cpu_kernel("special_chebyshev_polynomial_t", polynomial_kernel<chebyshev_of<0, false>>);
  ops::set_cpu_kernel("special_chebyshev_polynomial_u", polynomial_kernel<chebyshev_of<1, false>>);
  ops::set_cpu_kernel("special_chebyshev_polynomial_v", polynomial_kernel<chebyshev_of<2, false>>);
  ops::set_cpu_kernel("special_chebyshev_polynomial_w", polynomial_kernel<chebyshev_of<3, false>>);
  ops::set_cpu_kernel("special_shifted_chebyshev_polynomial_t", polynomial_kernel<chebyshev_of<0, true>>);
  ops::set_cpu_kernel("special_shifted_chebyshev_polynomial_u", polynomial_kernel<chebyshev_of<1, true>>);
  ops::set_cpu_kernel("special_shifted_chebyshev_polynomial_v", polynomial_kernel<chebyshev_of<2, true>>);
  ops::set_cpu_kernel("special_shifted_chebyshev_polynomial_w", polynomial_kernel<chebyshev_of<3, true>>);
  ops::set_cpu_kernel("special_hermite_polynomial_h", polynomial_kernel<hermite_h_of>);
  ops::set_cpu_kernel("special_hermite_polynomial_he", polynomial_kernel<hermite_he_of>);
  ops::set_cpu_kernel("special_laguerre_polynomial_l", polynomial_kernel<sp::laguerre>);
  ops::set_cpu_kernel("special_legendre_polynomial_p", polynomial_kernel<sp::legendre>);
}

}  // namespace rill::cpu
