// The optimizer update ops (ops/optim.cpp, kernels/cpu/optim.cpp) on two-element cases worked out in
// double with the eager optimizer's formulas, and their typed errors. tests/python/test_fused_optim.py
// checks them against rill.optim and torch.optim over 200 steps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/eager/functional.h"

namespace rill {
namespace {

Tensor from_values(const std::vector<double>& values, DType dtype = DType::kFloat64) {
  Tensor t = eager::empty({static_cast<int64_t>(values.size())}, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kFloat32) static_cast<float*>(t.data_ptr())[i] = static_cast<float>(values[i]);
    else static_cast<double*>(t.data_ptr())[i] = values[i];
  }
  return t;
}

std::vector<double> values_of(const Tensor& t) {
  eager::wait_readable(t);
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const double*>(t.data_ptr())[i];
  return out;
}

Tensor scalar(double v) { return eager::full({}, Scalar(v), DType::kFloat64); }

double value_of(const Tensor& t) { return values_of(t)[0]; }

// attrs in signature order: momentum, dampening, nesterov, weight_decay, maximize.
std::vector<Tensor> sgd(const std::vector<Tensor>& inputs, double momentum, double dampening) {
  return eager::call(eager::op("_sgd_update"), inputs, {},
                     make_attrs({momentum, dampening, false, 0.0, false}));
}

TEST(FusedOptim, SgdMomentumTakesTheGradientOnTheFirstStep) {
  Tensor p = from_values({1, 2}), g = from_values({0.5, -1}), buf = from_values({9, 9});
  std::vector<Tensor> first = sgd({p, g, buf, scalar(0), scalar(0.1)}, 0.9, 0.5);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(values_of(first[1]), (std::vector<double>{0.5, -1}));  // the buffer held 9s: ignored
  EXPECT_EQ(values_of(first[0]), (std::vector<double>{1 + 0.5 * -0.1, 2 + -1 * -0.1}));
  EXPECT_EQ(value_of(first[2]), 1);
  std::vector<Tensor> second = sgd({first[0], g, first[1], first[2], scalar(0.1)}, 0.9, 0.5);
  const double b0 = 0.5 * 0.9 + 0.5 * 0.5, b1 = -1 * 0.9 + -1 * 0.5;
  EXPECT_EQ(values_of(second[1]), (std::vector<double>{b0, b1}));
  EXPECT_EQ(values_of(second[0]), (std::vector<double>{(1 + 0.5 * -0.1) + b0 * -0.1, (2 + -1 * -0.1) + b1 * -0.1}));
  EXPECT_EQ(value_of(second[2]), 2);
}

TEST(FusedOptim, AdamFirstStepByHand) {
  Tensor p = from_values({1, -3}), g = from_values({0.5, 2}), zeros = from_values({0, 0});
  // beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay
  std::vector<Tensor> out = eager::call(eager::op("_adam_update"), std::vector<Tensor>{p, g, zeros, zeros, scalar(0),
                                        scalar(0.01)}, {}, make_attrs({0.9, 0.999, 1e-8, 0.0, false, false, false}));
  ASSERT_EQ(out.size(), 4u);
  const double gs[] = {0.5, 2}, ps[] = {1, -3};
  const double step_size = 0.01 / (1 - std::pow(0.9, 1.0)), bc2 = std::sqrt(1 - std::pow(0.999, 1.0));
  for (size_t i = 0; i < 2; ++i) {
    const double m = 0 + (gs[i] - 0) * (1 - 0.9), v = 0 * 0.999 + gs[i] * (1 - 0.999) * gs[i];
    EXPECT_EQ(values_of(out[1])[i], m);
    EXPECT_EQ(values_of(out[2])[i], v);
    EXPECT_EQ(values_of(out[0])[i], ps[i] + m / (std::sqrt(v) / bc2 + 1e-8) * -step_size);
  }
  EXPECT_EQ(value_of(out[3]), 1);
}

TEST(FusedOptim, ErrorsAreTyped) {
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    ADD_FAILURE() << "no error";
    return ErrorKind::kRuntime;
  };
  Tensor p = from_values({1, 2});
  Tensor half = eager::full({2}, Scalar(1.0), DType::kFloat16);
  EXPECT_EQ(kind_of([&] { sgd({half, half, scalar(0), scalar(0.1)}, 0, 0); }), ErrorKind::kType);
  EXPECT_EQ(kind_of([&] { sgd({p, from_values({1, 2}, DType::kFloat32), scalar(0), scalar(0.1)}, 0, 0); }),
            ErrorKind::kType);
  EXPECT_EQ(kind_of([&] { sgd({p, from_values({1, 2, 3}), scalar(0), scalar(0.1)}, 0, 0); }), ErrorKind::kValue);
  EXPECT_EQ(kind_of([&] { sgd({p, p, scalar(0), scalar(0.1)}, 0.9, 0); }), ErrorKind::kValue);  // no buffer
  EXPECT_EQ(kind_of([&] { sgd({p, p, p, scalar(0.1)}, 0, 0); }), ErrorKind::kType);  // a step of shape [2]
}

}  // namespace
}  // namespace rill
