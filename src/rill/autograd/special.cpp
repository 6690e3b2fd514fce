// Gradient rules of the special functions (ops/special.cpp), with PyTorch's
// formulas (derivatives.yaml): digamma -> polygamma(1), lgamma -> digamma,
// polygamma(n) -> polygamma(n + 1), the incomplete gammas and zeta with respect
// to their second argument only, i1 / i1e with their limit 1/2 at 0. Where
// PyTorch has no derivative (the first argument of igamma, igammac and zeta;
// the Bessel and Airy functions; the polynomials) the rule raises
// as PyTorch's backward does.
#include <cmath>
#include <string>
#include <string_view>

#include "rill/autograd/rules.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2, kOut0 = 1, kOut1 = 2;

[[noreturn]] void fail_not_implemented(const GradContext& c, std::string_view what) {
  RILL_FAIL(NotImplemented, "the derivative for '", what, "' is not implemented (as in PyTorch); compute ",
            c.op().name, " under rill.no_grad() or on detach()ed inputs");
}

std::vector<Tensor> not_implemented_backward(const GradContext& c) { fail_not_implemented(c, c.op().name); }

std::vector<Tensor> digamma_backward(const GradContext& c) {
  return {eager::mul(c.grad(), eager::polygamma(1, c.input(0)))};
}

std::vector<Tensor> lgamma_backward(const GradContext& c) { return {eager::mul(c.grad(), eager::digamma(c.input(0)))}; }

std::vector<Tensor> polygamma_backward(const GradContext& c) {
  return {eager::mul(c.grad(), eager::polygamma(c.attr<int64_t>("n") + 1, c.input(0)))};
}

// mvlgamma: g * sum_{j < p} digamma(x - j / 2)
std::vector<Tensor> mvlgamma_backward(const GradContext& c) {
  const int64_t p = c.attr<int64_t>("p");
  Tensor x = c.input(0), sum = eager::digamma(x);
  for (int64_t j = 1; j < p; ++j) sum = eager::add(sum, eager::digamma(eager::sub(x, Scalar(0.5 * double(j)))));
  return {eager::mul(c.grad(), sum)};
}

// erfinv: g * sqrt(pi) / 2 * exp(y^2)
std::vector<Tensor> erfinv_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(eager::mul(c.grad(), Scalar(0.5 * std::sqrt(M_PI))), eager::exp(eager::mul(y, y)))};
}

// igamma(a, x) with respect to x: exp((a - 1) log x - x - lgamma(a)); igammac: its negative.
std::vector<Tensor> incomplete_gamma_backward(const GradContext& c, bool upper) {
  if (c.needs_grad(0)) fail_not_implemented(c, std::string(c.op().name) + ": input");
  Tensor a = c.input(0), x = c.input(1);
  Tensor density = eager::exp(
      eager::sub(eager::sub(eager::mul(eager::sub(a, Scalar(1.0)), eager::log(x)), x), eager::lgamma(a)));
  Tensor g = eager::mul(c.grad(), density);
  return {Tensor(), upper ? eager::neg(g) : g};
}
std::vector<Tensor> igamma_backward(const GradContext& c) { return incomplete_gamma_backward(c, false); }
std::vector<Tensor> igammac_backward(const GradContext& c) { return incomplete_gamma_backward(c, true); }

// zeta(s, q) with respect to q: -s zeta(s + 1, q).
std::vector<Tensor> zeta_backward(const GradContext& c) {
  if (c.needs_grad(0)) fail_not_implemented(c, "zeta");
  Tensor s = c.input(0), q = c.input(1);
  return {Tensor(), eager::mul(eager::mul(c.grad(), eager::neg(s)), eager::special_zeta(eager::add(s, Scalar(1.0)), q))};
}

// nextafter: the gradient passes to self (a step of one ulp), none to other (PyTorch's zeros).
std::vector<Tensor> nextafter_backward(const GradContext& c) {
  return {c.grad(), scalar_tensor(Scalar(int64_t{0}), c.grad().dtype())};
}

// frexp: the mantissa's gradient divided by 2^exponent.
std::vector<Tensor> frexp_backward(const GradContext& c) {
  Tensor g = c.grad(0);
  Tensor two_to_e = eager::pow(scalar_tensor(Scalar(2.0), g.dtype()), eager::to_dtype(c.output(1), g.dtype()));
  return {eager::div(g, two_to_e)};
}

// erfcx: g * (2 x y - 2 / sqrt(pi))
std::vector<Tensor> erfcx_backward(const GradContext& c) {
  Tensor d = eager::sub(eager::mul(eager::mul(c.input(0), c.output(0)), Scalar(2.0)), Scalar(M_2_SQRTPI));
  return {eager::mul(c.grad(), d)};
}

// log_ndtr: g / sqrt(2 pi) * exp(-(y + x^2 / 2))
std::vector<Tensor> log_ndtr_backward(const GradContext& c) {
  Tensor x = c.input(0);
  Tensor e = eager::exp(eager::neg(eager::add(c.output(0), eager::mul(eager::mul(x, x), Scalar(0.5)))));
  return {eager::mul(eager::mul(c.grad(), Scalar(1 / std::sqrt(2 * M_PI))), e)};
}

// ndtri: g * sqrt(2 pi) * exp(y^2 / 2)
std::vector<Tensor> ndtri_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(eager::mul(c.grad(), Scalar(std::sqrt(2 * M_PI))), eager::exp(eager::mul(eager::mul(y, y), Scalar(0.5))))};
}

// x with its zeros replaced by 1 (the rules below take the limit there).
Tensor nonzero_or_one(const Tensor& x, const Tensor& is_zero) {
  return eager::where(is_zero, scalar_tensor(Scalar(1.0), x.dtype()), x);
}

// modified_bessel_i0: g * i1(x). PyTorch has no derivative for it; rill needs one for i1's second derivative
// (create_graph), whose rule reads i0.
std::vector<Tensor> modified_bessel_i0_backward(const GradContext& c) {
  return {eager::mul(c.grad(), eager::unary(eager::op("special_i1"), c.input(0)))};
}

// i1: g * (i0(x) - y / x), 1/2 at 0.
std::vector<Tensor> i1_backward(const GradContext& c) {
  Tensor x = c.input(0), zero = eager::eq(x, Scalar(0.0)), safe = nonzero_or_one(x, zero);
  Tensor d = eager::sub(eager::special_modified_bessel_i0(safe), eager::div(c.output(0), safe));
  return {eager::mul(c.grad(), eager::where(zero, scalar_tensor(Scalar(0.5), x.dtype()), d))};
}

// i1e: g * (i0e(x) - y (sign(x) + 1 / x)), 1/2 at 0.
std::vector<Tensor> i1e_backward(const GradContext& c) {
  Tensor x = c.input(0), zero = eager::eq(x, Scalar(0.0)), safe = nonzero_or_one(x, zero);
  Tensor d = eager::sub(eager::special_i0e(safe),
                        eager::mul(c.output(0), eager::add(eager::sign(safe), eager::div(scalar_tensor(Scalar(1.0), x.dtype()), safe))));
  return {eager::mul(c.grad(), eager::where(zero, scalar_tensor(Scalar(0.5), x.dtype()), d))};
}

// i0e: g * (i1e(x) - sign(x) y)
std::vector<Tensor> i0e_backward(const GradContext& c) {
  Tensor x = c.input(0);
  return {eager::mul(c.grad(), eager::sub(eager::special_i1e(x), eager::mul(eager::sign(x), c.output(0))))};
}

}  // namespace

void register_special_rules() {
  define_rule("digamma", {"DigammaBackward0", digamma_backward, kIn0});
  define_rule("lgamma", {"LgammaBackward0", lgamma_backward, kIn0});
  define_rule("_polygamma", {"PolygammaBackward0", polygamma_backward, kIn0});
  define_rule("mvlgamma", {"MvlgammaBackward0", mvlgamma_backward, kIn0});
  define_rule("erfinv", {"ErfinvBackward0", erfinv_backward, 0, kOut0});
  define_rule("igamma", {"IgammaBackward0", igamma_backward, kIn0 | kIn1});
  define_rule("igammac", {"IgammacBackward0", igammac_backward, kIn0 | kIn1});
  define_rule("special_zeta", {"SpecialZetaBackward0", zeta_backward, kIn0 | kIn1});
  define_rule("nextafter", {"NextafterBackward0", nextafter_backward});
  define_rule("_frexp", {"FrexpBackward0", frexp_backward, 0, kOut1});
  define_rule("special_erfcx", {"SpecialErfcxBackward0", erfcx_backward, kIn0, kOut0});
  define_rule("special_log_ndtr", {"SpecialLogNdtrBackward0", log_ndtr_backward, kIn0, kOut0});
  define_rule("special_ndtri", {"SpecialNdtriBackward0", ndtri_backward, 0, kOut0});
  define_rule("special_i1", {"SpecialI1Backward0", i1_backward, kIn0, kOut0});
  define_rule("special_modified_bessel_i0",
              {"SpecialModifiedBesselI0Backward0", modified_bessel_i0_backward, kIn0});
  define_rule("special_i1e", {"SpecialI1EBackward0", i1e_backward, kIn0, kOut0});
  define_rule("special_i0e", {"SpecialI0EBackward0", i0e_backward, kIn0, kOut0});
  for (const char* n : {"special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                        "special_bessel_y1", "special_modified_bessel_i1",
                        "special_modified_bessel_k0", "special_modified_bessel_k1",
                        "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
                        "special_spherical_bessel_j0", "special_chebyshev_polynomial_t",
                        "special_chebyshev_polynomial_u", "special_chebyshev_polynomial_v",
                        "special_chebyshev_polynomial_w", "special_shifted_chebyshev_polynomial_t",
                        "special_shifted_chebyshev_polynomial_u", "special_shifted_chebyshev_polynomial_v",
                        "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h",
                        "special_hermite_polynomial_he", "special_laguerre_polynomial_l",
                        "special_legendre_polynomial_p"})
    define_rule(n, {"NotImplemented", not_implemented_backward});
}

}  // namespace rill::autograd
