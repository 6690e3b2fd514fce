// Gradient rules of the elementwise ops (ops/elementwise.cpp), with PyTorch's
// formulas: ties of maximum/minimum split the gradient in half, abs and relu
// give 0 at 0, pow follows pow_backward_self / pow_backward_exponent.
#include <cmath>

#include "rill/autograd/rules.h"
#include "rill/ops/elementwise.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2, kIn2 = 4, kOut0 = 1;

Tensor zero_like(const Tensor& g) { return scalar_tensor(Scalar(int64_t{0}), g.dtype()); }

// --- unary ---

std::vector<Tensor> neg_backward(const GradContext& c) { return {unary("neg", c.grad())}; }

std::vector<Tensor> abs_backward(const GradContext& c) {
  Tensor x = c.input(0), g = c.grad();
  Tensor zero = zero_like(g);
  return {choose(binary("gt_scalar", x, Scalar(int64_t{0})), g,
                choose(binary("lt_scalar", x, Scalar(int64_t{0})), unary("neg", g), zero))};
}

std::vector<Tensor> relu_backward(const GradContext& c) {
  return {choose(binary("gt_scalar", c.output(0), Scalar(int64_t{0})), c.grad(), zero_like(c.grad()))};
}

std::vector<Tensor> exp_backward(const GradContext& c) { return {binary("mul", c.grad(), c.output(0))}; }

std::vector<Tensor> log_backward(const GradContext& c) { return {binary("div", c.grad(), c.input(0))}; }

std::vector<Tensor> sqrt_backward(const GradContext& c) {
  return {binary("div", c.grad(), binary("mul_scalar", c.output(0), Scalar(2.0)))};
}

std::vector<Tensor> sigmoid_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {binary("mul", c.grad(), binary("mul", binary("rsub_scalar", y, Scalar(1.0)), y))};
}

std::vector<Tensor> tanh_backward(const GradContext& c) {
  Tensor y = c.output(0);
  return {binary("mul", c.grad(), binary("rsub_scalar", binary("mul", y, y), Scalar(1.0)))};
}

// --- binary ---

std::vector<Tensor> add_backward(const GradContext& c) { return {c.grad(), c.grad()}; }

std::vector<Tensor> sub_backward(const GradContext& c) {
  return {c.grad(), c.needs_grad(1) ? unary("neg", c.grad()) : Tensor()};
}

std::vector<Tensor> mul_backward(const GradContext& c) {
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = binary("mul", c.grad(), c.input(1));
  if (c.needs_grad(1)) gb = binary("mul", c.grad(), c.input(0));
  return {ga, gb};
}

std::vector<Tensor> div_backward(const GradContext& c) {
  Tensor ga, gb;
  Tensor b = c.input(1);
  if (c.needs_grad(0)) ga = binary("div", c.grad(), b);
  if (c.needs_grad(1))
    gb = binary("div", binary("mul", unary("neg", c.grad()), c.input(0)), binary("mul", b, b));
  return {ga, gb};
}

// d(a^b)/da = b * a^(b-1) (0 where b == 0); d(a^b)/db = a^b * log(a) (0 where a == 0 and b >= 0).
std::vector<Tensor> pow_backward(const GradContext& c) {
  Tensor a = c.input(0), b = c.input(1), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor ga, gb;
  if (c.needs_grad(0)) {
    Tensor d = binary("mul", b, binary("pow", a, binary("sub_scalar", b, Scalar(int64_t{1}))));
    ga = choose(binary("eq_scalar", b, Scalar(int64_t{0})), zero, binary("mul", g, d));
  }
  if (c.needs_grad(1)) {
    Tensor d = binary("mul", c.output(0), unary("log", a));
    Tensor masked = choose(binary("eq_scalar", a, Scalar(int64_t{0})),
                          choose(binary("ge_scalar", b, Scalar(int64_t{0})), zero, d), d);
    gb = binary("mul", g, masked);
  }
  return {ga, gb};
}

// maximum: the larger input gets the gradient, ties split it (PyTorch's formula, so NaNs match too).
std::vector<Tensor> extremum_backward(const GradContext& c, const char* loses_a, const char* loses_b) {
  Tensor a = c.input(0), b = c.input(1), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor half = binary("div_scalar", g, Scalar(2.0));
  Tensor tie = binary("eq", a, b);
  Tensor shared = choose(tie, half, g);
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = choose(binary(loses_a, a, b), zero, shared);
  if (c.needs_grad(1)) gb = choose(binary(loses_b, a, b), zero, shared);
  return {ga, gb};
}

std::vector<Tensor> maximum_backward(const GradContext& c) { return extremum_backward(c, "lt", "gt"); }
std::vector<Tensor> minimum_backward(const GradContext& c) { return extremum_backward(c, "gt", "lt"); }

// --- with a Python number s ---

Scalar number(const GradContext& c) { return c.scalars()[0]; }

std::vector<Tensor> identity_backward(const GradContext& c) { return {c.grad()}; }

std::vector<Tensor> mul_scalar_backward(const GradContext& c) { return {binary("mul_scalar", c.grad(), number(c))}; }

std::vector<Tensor> div_scalar_backward(const GradContext& c) { return {binary("div_scalar", c.grad(), number(c))}; }

// s / x: -g * s / x^2
std::vector<Tensor> rdiv_scalar_backward(const GradContext& c) {
  Tensor x = c.input(0);
  return {binary("div", binary("mul_scalar", unary("neg", c.grad()), number(c)), binary("mul", x, x))};
}

// x ** s: s * x^(s-1), 0 when s == 0.
std::vector<Tensor> pow_scalar_backward(const GradContext& c) {
  Scalar s = number(c);
  if (s.to_double() == 0.0) return {zero_like(c.grad())};
  Tensor x = c.input(0);
  Scalar s1 = s.is_floating() ? Scalar(s.to_double() - 1.0) : Scalar(s.to_int() - 1);
  return {binary("mul", c.grad(), binary("mul_scalar", binary("pow_scalar", x, s1), s))};
}

// s ** x: s^x * log(s), 0 where s == 0 and x >= 0.
std::vector<Tensor> rpow_scalar_backward(const GradContext& c) {
  Scalar s = number(c);
  Tensor y = c.output(0), g = c.grad();
  Tensor d = binary("mul_scalar", y, Scalar(std::log(s.to_double())));
  if (s.to_double() == 0.0) d = choose(binary("ge_scalar", c.input(0), Scalar(int64_t{0})), zero_like(g), d);
  return {binary("mul", g, d)};
}

// maximum(x, s) / minimum(x, s): as the tensor-tensor forms with a constant other.
std::vector<Tensor> extremum_scalar_backward(const GradContext& c, const char* loses, const char* ties) {
  Tensor x = c.input(0), g = c.grad();
  Tensor shared = choose(binary(ties, x, number(c)), binary("div_scalar", g, Scalar(2.0)), g);
  return {choose(binary(loses, x, number(c)), zero_like(g), shared)};
}

std::vector<Tensor> maximum_scalar_backward(const GradContext& c) {
  return extremum_scalar_backward(c, "lt_scalar", "eq_scalar");
}
std::vector<Tensor> minimum_scalar_backward(const GradContext& c) {
  return extremum_scalar_backward(c, "gt_scalar", "eq_scalar");
}

std::vector<Tensor> rsub_scalar_backward(const GradContext& c) { return {unary("neg", c.grad())}; }

// choose(cond, a, b)
std::vector<Tensor> where_backward(const GradContext& c) {
  Tensor cond = c.input(0), g = c.grad();
  Tensor zero = zero_like(g);
  Tensor ga, gb;
  if (c.needs_grad(1)) ga = choose(cond, g, zero);
  if (c.needs_grad(2)) gb = choose(cond, zero, g);
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

  for (std::string_view n : kCompareOps) {
    define_rule(n, {});
    define_rule(std::string(n) + "_scalar", {});
  }
}

}  // namespace rill::autograd
