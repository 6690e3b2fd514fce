// Gradient rules of the elementwise ops (ops/elementwise.cpp), with PyTorch's
// formulas: ties of maximum/minimum split the gradient in half, abs and relu
// give 0 at 0, pow follows pow_backward_self / pow_backward_exponent, clamp
// passes the gradient where min <= x <= max (bounds included) and hardtanh only
// strictly inside, rounding ops and sign give zeros, and floor_divide's
// backward raises as PyTorch's does. Activations run their `<name>_backward` op.
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>

#include "rill/autograd/rules.h"
#include "rill/eager/math.h"
#include "rill/ops/elementwise.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2, kIn2 = 4, kOut0 = 1;


Tensor zero_like(const Tensor& g) { return scalar_tensor(Scalar(int64_t{0}), g.dtype()); }

// --- unary ---

std::vector<Tensor> neg_backward(const GradContext& c) { return {eager::neg(c.grad())}; }

std::vector<Tensor> abs_backward(const GradContext& c) {
  // g * sign(x), as PyTorch: a NaN gradient stays NaN where x is 0 or NaN (sign 0)
  return {eager::mul(c.grad(), eager::sign(c.input(0)))};
}

std::vector<Tensor> relu_backward(const GradContext& c) {
  // le, not gt: a NaN output passes its gradient on, as PyTorch's threshold_backward
  return {eager::where(eager::le(c.output(0), Scalar(int64_t{0})), zero_like(c.grad()), c.grad())};
}

std::vector<Tensor> exp_backward(const GradContext& c) { return {eager::mul(c.grad(), c.output(0))}; }

std::vector<Tensor> log_backward(const GradContext& c) { return {eager::div(c.grad(), c.input(0))}; }

std::vector<Tensor> sqrt_backward(const GradContext& c) {
  return {eager::div(c.grad(), eager::mul(c.output(0), Scalar(2.0)))};
}

std::vector<Tensor> sigmoid_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(c.grad(), eager::mul(eager::rsub(y, Scalar(1.0)), y))};
}

std::vector<Tensor> tanh_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(c.grad(), eager::rsub(eager::mul(y, y), Scalar(1.0)))};
}

std::vector<Tensor> zero_backward(const GradContext& c) { return {zeros(c.grad().shape(), c.grad().dtype())}; }

std::vector<Tensor> log1p_backward(const GradContext& c) {
  return {eager::div(c.grad(), eager::add(c.input(0), Scalar(int64_t{1})))};
}

std::vector<Tensor> expm1_backward(const GradContext& c) {
  return {eager::mul(c.grad(), eager::add(c.output(0), Scalar(int64_t{1})))};
}

// rsqrt: -0.5 * g * y^3
std::vector<Tensor> rsqrt_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(eager::mul(c.grad(), Scalar(-0.5)), eager::mul(eager::mul(y, y), y))};
}

std::vector<Tensor> sin_backward(const GradContext& c) { return {eager::mul(c.grad(), eager::cos(c.input(0)))}; }

std::vector<Tensor> cos_backward(const GradContext& c) {
  return {eager::mul(eager::neg(c.grad()), eager::sin(c.input(0)))};
}

// erf: g * 2/sqrt(pi) * exp(-x^2)
std::vector<Tensor> erf_backward(const GradContext& c) {
  Tensor x = c.input(0);
  Tensor e = eager::exp(eager::neg(eager::mul(x, x)));
  return {eager::mul(eager::mul(c.grad(), Scalar(M_2_SQRTPI)), e)};
}

// reciprocal: -g * y^2
std::vector<Tensor> reciprocal_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {eager::mul(eager::neg(c.grad()), eager::mul(y, y))};
}

// silu, gelu, softplus, ...: the op's own backward kernel, with the call's numbers and attrs.
std::vector<Tensor> activation_rule(const GradContext& c) {
  return {eager::activation_backward(c.op(), c.grad(), c.input(0), c.scalars(), c.interned_attrs())};
}

// PyTorch's node name of an op: its snake_case name in CamelCase ("leaky_relu" -> "LeakyRelu") and suffix.
std::string camel_node_name(std::string_view op, std::string_view suffix) {
  std::string name;
  bool upper = true;
  for (char ch : op) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    name += upper && ch >= 'a' && ch <= 'z' ? static_cast<char>(ch - 'a' + 'A') : ch;
    upper = false;
  }
  return name += suffix;
}

// <activation>_backward(g, x) = g * f'(x), differentiable for create_graph (Note [Gradients of gradients] in
// rules.h): linear in g (its gradient is the same backward op applied to gg), and gg * g * f''(x) for x.
Tensor unary_op(const char* name, const Tensor& x) { return eager::unary(eager::op(name), x); }

Tensor activation_second_derivative(std::string_view act, const Tensor& x, std::span<const Scalar> scalars,
                                    const std::string& approximate) {
  using namespace eager;
  if (act == "silu") {  // s (1 - s) (2 + x (1 - 2 s))
    Tensor s = unary_op("sigmoid", x);
    return mul(mul(s, rsub(s, Scalar(1.0))), add(mul(x, rsub(mul(s, Scalar(2.0)), Scalar(1.0))), Scalar(2.0)));
  }
  if (act == "gelu" && approximate == "tanh") {
    // f = x (1 + t) / 2, t = tanh(u), u = k (x + a x^3): f'' = (1 - t^2) u' - x t (1 - t^2) u'^2 + x (1 - t^2) u'' / 2
    const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
    Tensor x2 = mul(x, x);
    Tensor t = unary_op("tanh", mul(add(x, mul(mul(x2, x), Scalar(a))), Scalar(k)));
    Tensor sech2 = rsub(mul(t, t), Scalar(1.0));
    Tensor du = mul(add(mul(x2, Scalar(3.0 * a)), Scalar(1.0)), Scalar(k));
    Tensor ddu = mul(x, Scalar(6.0 * a * k));
    Tensor term = sub(add(du, mul(mul(x, ddu), Scalar(0.5))), mul(mul(mul(x, t), du), du));
    return mul(sech2, term);
  }
  if (act == "gelu") {  // phi(x) (2 - x^2)
    Tensor x2 = mul(x, x);
    Tensor phi = mul(exp(mul(x2, Scalar(-0.5))), Scalar(1.0 / std::sqrt(2.0 * std::numbers::pi)));
    return mul(phi, rsub(x2, Scalar(2.0)));
  }
  if (act == "softplus") {  // beta s (1 - s), s = sigmoid(beta x), where beta x <= threshold; else 0
    const double beta = scalars[0].to_double(), threshold = scalars[1].to_double();
    Tensor bx = mul(x, Scalar(beta));
    Tensor s = unary_op("sigmoid", bx);
    Tensor d2 = mul(mul(s, rsub(s, Scalar(1.0))), Scalar(beta));
    return where(gt(bx, Scalar(threshold)), zeros(d2.shape(), d2.dtype()), d2);
  }
  if (act == "elu") {  // alpha exp(x) below 0
    Tensor e = mul(exp(x), scalars[0]);
    return where(gt(x, Scalar(int64_t{0})), zeros(e.shape(), e.dtype()), e);
  }
  return Tensor();  // leaky_relu, hardtanh: piecewise linear, f'' = 0
}

std::vector<Tensor> activation_backward_rule(const GradContext& c) {
  std::string_view name = c.op().name;
  std::string_view act = name.substr(0, name.size() - std::string_view("_backward").size());
  const Tensor& gg = c.grad();
  std::vector<Tensor> out(2);
  if (c.needs_grad(0))
    out[0] = eager::activation_backward(eager::op(act), gg, c.input(1), c.scalars(), c.interned_attrs());
  if (c.needs_grad(1)) {
    const std::string approximate = act == "gelu" ? c.attr<std::string>("approximate") : std::string();
    Tensor d2 = activation_second_derivative(act, c.input(1), c.scalars(), approximate);
    out[1] = d2.defined() ? eager::mul(eager::mul(gg, c.input(0)), d2) : Tensor();
  }
  return out;
}

// clamp with numbers: g where min <= x <= max (the bounds given, not None), else 0 (NaN in x gets 0).
std::vector<Tensor> clamp_scalar_backward(const GradContext& c) {
  Tensor x = c.input(0), g = c.grad();
  Tensor keep;
  if (!c.scalars()[0].is_none()) keep = eager::ge(x, c.scalars()[0]);
  if (!c.scalars()[1].is_none()) {
    Tensor le = eager::le(x, c.scalars()[1]);
    keep = keep.defined() ? eager::logical_and(keep, le) : le;
  }
  return {eager::where(keep, g, zero_like(g))};
}

// clamp(x, min, max) with tensors (PyTorch's clamp_backward_min_max): when min > max, max wins.
std::vector<Tensor> clamp_backward(const GradContext& c) {
  Tensor x = c.input(0), lo = c.input(1), hi = c.input(2), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor gx, glo, ghi;
  if (c.needs_grad(0)) gx = eager::where(eager::logical_and(eager::ge(x, lo), eager::le(x, hi)), g, zero);
  if (c.needs_grad(1)) glo = eager::where(eager::logical_and(eager::lt(x, lo), eager::lt(lo, hi)), g, zero);
  if (c.needs_grad(2)) ghi = eager::where(eager::logical_or(eager::gt(x, hi), eager::lt(hi, lo)), g, zero);
  return {gx, glo, ghi};
}

// clamp_min(x, min): x keeps the gradient where x >= min, min gets it elsewhere (clamp_max: mirrored).
using Compare = Tensor (*)(const Tensor&, const Tensor&);
using CompareNumber = Tensor (*)(const Tensor&, Scalar);

std::vector<Tensor> clamp_bound_backward(const GradContext& c, Compare keeps) {
  Tensor x = c.input(0), b = c.input(1), g = c.grad();
  Tensor keep = keeps(x, b);
  Tensor zero = zero_like(g);
  return {c.needs_grad(0) ? eager::where(keep, g, zero) : Tensor(), c.needs_grad(1) ? eager::where(keep, zero, g) : Tensor()};
}

std::vector<Tensor> clamp_min_backward(const GradContext& c) { return clamp_bound_backward(c, eager::ge); }
std::vector<Tensor> clamp_max_backward(const GradContext& c) { return clamp_bound_backward(c, eager::le); }

// --- binary ---

std::vector<Tensor> add_backward(const GradContext& c) { return {c.grad(), c.grad()}; }

std::vector<Tensor> sub_backward(const GradContext& c) {
  return {c.grad(), c.needs_grad(1) ? eager::neg(c.grad()) : Tensor()};
}

std::vector<Tensor> mul_backward(const GradContext& c) {
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = eager::mul(c.grad(), c.input(1));
  if (c.needs_grad(1)) gb = eager::mul(c.grad(), c.input(0));
  return {ga, gb};
}

std::vector<Tensor> div_backward(const GradContext& c) {
  Tensor ga, gb;
  Tensor b = c.input(1);
  if (c.needs_grad(0)) ga = eager::div(c.grad(), b);
  if (c.needs_grad(1))
    gb = eager::div(eager::mul(eager::neg(c.grad()), c.input(0)), eager::mul(b, b));
  return {ga, gb};
}

// d(a^b)/da = b * a^(b-1) (0 where b == 0); d(a^b)/db = a^b * log(a) (0 where a == 0 and b >= 0).
std::vector<Tensor> pow_backward(const GradContext& c) {
  Tensor a = c.input(0), b = c.input(1), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor ga, gb;
  if (c.needs_grad(0)) {
    Tensor d = eager::mul(b, eager::pow(a, eager::sub(b, Scalar(int64_t{1}))));
    ga = eager::where(eager::eq(b, Scalar(int64_t{0})), zero, eager::mul(g, d));
  }
  if (c.needs_grad(1)) {
    Tensor d = eager::mul(c.output(0), eager::log(a));
    Tensor masked = eager::where(eager::eq(a, Scalar(int64_t{0})),
                          eager::where(eager::ge(b, Scalar(int64_t{0})), zero, d), d);
    gb = eager::mul(g, masked);
  }
  return {ga, gb};
}

// maximum: the larger input gets the gradient, ties split it (PyTorch's formula, so NaNs match too).
std::vector<Tensor> extremum_backward(const GradContext& c, Compare loses_a, Compare loses_b) {
  Tensor a = c.input(0), b = c.input(1), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor half = eager::div(g, Scalar(2.0));
  Tensor tie = eager::eq(a, b);
  Tensor shared = eager::where(tie, half, g);
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = eager::where(loses_a(a, b), zero, shared);
  if (c.needs_grad(1)) gb = eager::where(loses_b(a, b), zero, shared);
  return {ga, gb};
}

std::vector<Tensor> maximum_backward(const GradContext& c) { return extremum_backward(c, eager::lt, eager::gt); }
std::vector<Tensor> minimum_backward(const GradContext& c) { return extremum_backward(c, eager::gt, eager::lt); }

// floor_divide, and remainder with the number first: PyTorch has no derivative, and raises when asked.
[[noreturn]] std::vector<Tensor> not_implemented_backward(const GradContext&) {
  RILL_FAIL(Runtime, "derivative for floor_divide and remainder(number, tensor) is not implemented; compute "
            "them under rill.no_grad() or on detach()ed inputs");
}

// remainder: a - floor(a / b) * b; fmod: a - trunc(a / b) * b.
std::vector<Tensor> divmod_backward(const GradContext& c, const char* rounding) {
  Tensor gb;
  if (c.needs_grad(1)) {
    Tensor a = c.input(0), b = c.input(1), q;
    {
      // the rounded quotient is piecewise constant: no gradient of its own (create_graph), as in PyTorch
      eager::GradModeGuard constant(false);
      q = std::string_view(rounding) == "floor" ? eager::floor_divide(a, b) : eager::trunc(eager::div(a, b));
    }
    gb = eager::mul(eager::neg(c.grad()), q);
  }
  return {c.grad(), gb};
}

std::vector<Tensor> remainder_backward(const GradContext& c) { return divmod_backward(c, "floor"); }
std::vector<Tensor> fmod_backward(const GradContext& c) { return divmod_backward(c, "trunc"); }

// atan2(a, b): (g b, -g a) / (a^2 + b^2)
std::vector<Tensor> atan2_backward(const GradContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  Tensor r = eager::div(c.grad(), eager::add(eager::mul(a, a), eager::mul(b, b)));
  return {c.needs_grad(0) ? eager::mul(r, b) : Tensor(),
          c.needs_grad(1) ? eager::mul(eager::neg(r), a) : Tensor()};
}

// nan_to_num: the gradient passes where x is finite (|x| < inf), as in PyTorch.
std::vector<Tensor> nan_to_num_backward(const GradContext& c) {
  Tensor finite = eager::lt(eager::abs(c.input(0)), Scalar(std::numeric_limits<double>::infinity()));
  return {eager::where(finite, c.grad(), zero_like(c.grad()))};
}

// hardshrink: the gradient passes where |x| > lambd.
std::vector<Tensor> hardshrink_backward(const GradContext& c) {
  Tensor kept = eager::gt(eager::abs(c.input(0)), c.scalars()[0]);
  return {eager::where(kept, c.grad(), zero_like(c.grad()))};
}

// logaddexp: d/da = 1 / (1 + e^(b - a)), d/db = 1 / (1 + e^(a - b)).
std::vector<Tensor> logaddexp_backward(const GradContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  auto part = [&](const Tensor& x, const Tensor& y) {
    return eager::div(c.grad(), eager::add(eager::exp(eager::sub(y, x)), Scalar(1.0)));
  };
  return {c.needs_grad(0) ? part(a, b) : Tensor(), c.needs_grad(1) ? part(b, a) : Tensor()};
}

// lerp(start, end, w) = start + w (end - start)
std::vector<Tensor> lerp_backward(const GradContext& c) {
  Tensor g = c.grad(), w = c.input(2);
  Tensor gs, ge, gw;
  if (c.needs_grad(0)) gs = eager::mul(g, eager::rsub(w, Scalar(int64_t{1})));
  if (c.needs_grad(1)) ge = eager::mul(g, w);
  if (c.needs_grad(2)) gw = eager::mul(g, eager::sub(c.input(1), c.input(0)));
  return {gs, ge, gw};
}

std::vector<Tensor> lerp_scalar_backward(const GradContext& c) {
  Scalar w = c.scalars()[0];
  Tensor g = c.grad();
  return {c.needs_grad(0) ? eager::mul(g, Scalar(1.0 - w.to_double())) : Tensor(),
          c.needs_grad(1) ? eager::mul(g, w) : Tensor()};
}

// addcmul(x, a, b, value) = x + value a b
std::vector<Tensor> addcmul_backward(const GradContext& c) {
  Tensor gv = eager::mul(c.grad(), c.scalars()[0]);
  return {c.grad(), c.needs_grad(1) ? eager::mul(gv, c.input(2)) : Tensor(),
          c.needs_grad(2) ? eager::mul(gv, c.input(1)) : Tensor()};
}

// addcdiv(x, a, b, value) = x + value a / b
std::vector<Tensor> addcdiv_backward(const GradContext& c) {
  Tensor gv = eager::mul(c.grad(), c.scalars()[0]);
  Tensor b = c.input(2);
  Tensor ga, gb;
  if (c.needs_grad(1)) ga = eager::div(gv, b);
  if (c.needs_grad(2)) gb = eager::div(eager::mul(eager::neg(gv), c.input(1)), eager::mul(b, b));
  return {c.grad(), ga, gb};
}

// --- with a Python number s ---

Scalar number(const GradContext& c) { return c.scalars()[0]; }

std::vector<Tensor> identity_backward(const GradContext& c) { return {c.grad()}; }

std::vector<Tensor> mul_scalar_backward(const GradContext& c) { return {eager::mul(c.grad(), number(c))}; }

std::vector<Tensor> div_scalar_backward(const GradContext& c) { return {eager::div(c.grad(), number(c))}; }

// s / x: -g * s / x^2
std::vector<Tensor> rdiv_scalar_backward(const GradContext& c) {
  Tensor x = c.input(0);
  return {eager::div(eager::mul(eager::neg(c.grad()), number(c)), eager::mul(x, x))};
}

// x ** s: s * x^(s-1), 0 when s == 0.
std::vector<Tensor> pow_scalar_backward(const GradContext& c) {
  Scalar s = number(c);
  if (s.to_double() == 0.0) return {zero_like(c.grad())};
  Tensor x = c.input(0);
  Scalar s1 = s.is_floating() ? Scalar(s.to_double() - 1.0) : Scalar(s.to_int() - 1);
  return {eager::mul(c.grad(), eager::mul(eager::pow(x, s1), s))};
}

// s ** x: s^x * log(s), 0 where s == 0 and x >= 0.
std::vector<Tensor> rpow_scalar_backward(const GradContext& c) {
  Scalar s = number(c);
  Tensor y = c.output(0), g = c.grad();
  Tensor d = eager::mul(y, Scalar(std::log(s.to_double())));
  if (s.to_double() == 0.0) d = eager::where(eager::ge(c.input(0), Scalar(int64_t{0})), zero_like(g), d);
  return {eager::mul(g, d)};
}

// maximum(x, s) / minimum(x, s): as the tensor-tensor forms with a constant other.
std::vector<Tensor> extremum_scalar_backward(const GradContext& c, CompareNumber loses) {
  Tensor x = c.input(0), g = c.grad();
  Tensor shared = eager::where(eager::eq(x, number(c)), eager::div(g, Scalar(2.0)), g);
  return {eager::where(loses(x, number(c)), zero_like(g), shared)};
}

std::vector<Tensor> maximum_scalar_backward(const GradContext& c) {
  return extremum_scalar_backward(c, eager::lt);
}
std::vector<Tensor> minimum_scalar_backward(const GradContext& c) {
  return extremum_scalar_backward(c, eager::gt);
}

std::vector<Tensor> rsub_scalar_backward(const GradContext& c) { return {eager::neg(c.grad())}; }

// eager::where(cond, a, b)
std::vector<Tensor> where_backward(const GradContext& c) {
  Tensor cond = c.input(0), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor ga, gb;
  if (c.needs_grad(1)) ga = eager::where(cond, g, zero);
  if (c.needs_grad(2)) gb = eager::where(cond, zero, g);
  return {Tensor(), ga, gb};
}

}  // namespace

void register_elementwise_rules() {
  define_rule("neg", {"NegBackward0", neg_backward});
  define_rule("abs", {"AbsBackward0", abs_backward, kIn0});
  define_rule("relu", {"ReluBackward0", relu_backward, 0, kOut0});
  define_rule("exp", {"ExpBackward0", exp_backward, 0, kOut0});
  define_rule("log", {"LogBackward0", log_backward, kIn0});
  define_rule("sqrt", {"SqrtBackward0", sqrt_backward, 0, kOut0});
  define_rule("sigmoid", {"SigmoidBackward0", sigmoid_backward, 0, kOut0});
  define_rule("tanh", {"TanhBackward0", tanh_backward, 0, kOut0});

  define_rule("add", {"AddBackward0", add_backward});
  define_rule("sub", {"SubBackward0", sub_backward});
  define_rule("mul", {"MulBackward0", mul_backward, kIn0 | kIn1});
  define_rule("div", {"DivBackward0", div_backward, kIn0 | kIn1});
  define_rule("pow", {"PowBackward1", pow_backward, kIn0 | kIn1, kOut0});
  define_rule("maximum", {"MaximumBackward0", maximum_backward, kIn0 | kIn1});
  define_rule("minimum", {"MinimumBackward0", minimum_backward, kIn0 | kIn1});

  define_rule("add_scalar", {"AddBackward0", identity_backward});
  define_rule("radd_scalar", {"AddBackward0", identity_backward});
  define_rule("sub_scalar", {"SubBackward0", identity_backward});
  define_rule("rsub_scalar", {"RsubBackward1", rsub_scalar_backward});
  define_rule("mul_scalar", {"MulBackward0", mul_scalar_backward});
  define_rule("rmul_scalar", {"MulBackward0", mul_scalar_backward});
  define_rule("div_scalar", {"DivBackward0", div_scalar_backward});
  define_rule("rdiv_scalar", {"MulBackward0", rdiv_scalar_backward, kIn0});
  define_rule("pow_scalar", {"PowBackward0", pow_scalar_backward, kIn0});
  define_rule("rpow_scalar", {"PowBackward2", rpow_scalar_backward, kIn0, kOut0});
  define_rule("maximum_scalar", {"ClampMinBackward0", maximum_scalar_backward, kIn0});
  define_rule("rmaximum_scalar", {"ClampMinBackward0", maximum_scalar_backward, kIn0});
  define_rule("minimum_scalar", {"ClampMaxBackward0", minimum_scalar_backward, kIn0});
  define_rule("rminimum_scalar", {"ClampMaxBackward0", minimum_scalar_backward, kIn0});

  define_rule("where", {"WhereBackward0", where_backward, kIn0});

  define_rule("sign", {"SignBackward0", zero_backward});
  for (std::string_view n : kRoundingOps) define_rule(n, {camel_node_name(n, "Backward0"), zero_backward});
  define_rule("round_decimals", {"RoundBackward1", zero_backward});
  define_rule("log1p", {"Log1PBackward0", log1p_backward, kIn0});
  define_rule("expm1", {"Expm1Backward0", expm1_backward, 0, kOut0});
  define_rule("rsqrt", {"RsqrtBackward0", rsqrt_backward, 0, kOut0});
  define_rule("sin", {"SinBackward0", sin_backward, kIn0});
  define_rule("cos", {"CosBackward0", cos_backward, kIn0});
  define_rule("erf", {"ErfBackward0", erf_backward, kIn0});
  define_rule("reciprocal", {"ReciprocalBackward0", reciprocal_backward, 0, kOut0});
  define_rule("gelu", {"GeluBackward0", activation_rule, kIn0});
  define_rule("silu", {"SiluBackward0", activation_rule, kIn0});
  define_rule("softplus", {"SoftplusBackward0", activation_rule, kIn0});
  define_rule("leaky_relu", {"LeakyReluBackward0", activation_rule, kIn0});
  define_rule("elu", {"EluBackward0", activation_rule, kIn0});
  define_rule("hardtanh", {"HardtanhBackward0", activation_rule, kIn0});
  for (std::string_view act : kActivationOps)
    define_rule(std::string(act) + "_backward",
                {camel_node_name(act, "BackwardBackward0"), activation_backward_rule, kIn0 | kIn1});
  define_rule("clamp_scalar", {"ClampBackward1", clamp_scalar_backward, kIn0});
  define_rule("clamp", {"ClampBackward0", clamp_backward, kIn0 | kIn1 | kIn2});
  define_rule("clamp_min", {"ClampMinBackward1", clamp_min_backward, kIn0 | kIn1});
  define_rule("clamp_max", {"ClampMaxBackward1", clamp_max_backward, kIn0 | kIn1});
  for (const char* n : {"floor_divide", "floor_divide_scalar", "rfloor_divide_scalar"})
    define_rule(n, {"NotImplemented", not_implemented_backward});
  define_rule("remainder", {"RemainderBackward0", remainder_backward, kIn0 | kIn1});
  define_rule("remainder_scalar", {"RemainderBackward1", identity_backward});
  define_rule("rremainder_scalar", {"NotImplemented", not_implemented_backward});
  define_rule("fmod", {"FmodBackward1", fmod_backward, kIn0 | kIn1});
  define_rule("fmod_scalar", {"FmodBackward0", identity_backward});
  define_rule("atan2", {"Atan2Backward0", atan2_backward, kIn0 | kIn1});
  define_rule("nan_to_num", {"NanToNumBackward0", nan_to_num_backward, kIn0});
  define_rule("hardshrink", {"HardshrinkBackward0", hardshrink_backward, kIn0});
  define_rule("logaddexp", {"LogaddexpBackward0", logaddexp_backward, kIn0 | kIn1});
  define_rule("lerp", {"LerpBackward1", lerp_backward, kIn0 | kIn1 | kIn2});
  define_rule("lerp_scalar", {"LerpBackward0", lerp_scalar_backward});
  define_rule("addcmul", {"AddcmulBackward0", addcmul_backward, kIn1 | kIn2});
  define_rule("addcdiv", {"AddcdivBackward0", addcdiv_backward, kIn1 | kIn2});

  for (std::string_view n : kCompareOps) {
    define_rule(n, {});
    define_rule(std::string(n) + "_scalar", {});
  }
}

}  // namespace rill::autograd
