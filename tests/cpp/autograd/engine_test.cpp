// autograd/: the engine on small graphs (diamond, accumulation, retain_graph, captures, hooks, in-place).
#include <gtest/gtest.h>

#include <vector>

#include "rill/autograd/engine.h"
#include "rill/eager/functional.h"
#include "rill/autograd/node.h"
#include "rill/util/error.h"

namespace rill {
namespace {

namespace ag = autograd;

std::vector<float> values(const Tensor& t) {
  Tensor c = eager::contiguous(t);
  eager::wait_readable(c);
  const float* p = static_cast<const float*>(c.data_ptr());
  return std::vector<float>(p, p + c.numel());
}

Tensor leaf(std::vector<float> v) {
  Tensor t = eager::empty({static_cast<int64_t>(v.size())}, DType::kFloat32);
  eager::wait_readable(eager::fill_(t, Scalar(0.0)));
  float* p = static_cast<float*>(t.data_ptr());
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  t.impl()->set_requires_grad(true);
  return t;
}

const OpSchema& op(const char* name) { return eager::op(name); }

Tensor sum(const Tensor& t) { return eager::reduce(op("sum"), t, {}, false); }

Tensor grad_of(const Tensor& t) {
  AutogradMeta* m = ag::find_meta(t);
  return m ? m->grad : Tensor();
}

TEST(AutogradEngine, DiamondSumsBothPaths) {
  // y = sum(a * a + exp(a)) with a = 2x: dy/dx = 2 * (2a + exp(a)).
  Tensor x = leaf({0.5f, -1.0f});
  Tensor a = eager::binary_scalar(op("mul_scalar"), x, Scalar(2.0));
  Tensor y = sum(eager::binary(op("add"), eager::binary(op("mul"), a, a), eager::unary(op("exp"), a)));
  Tensor roots[1] = {y};
  ag::backward(roots, {}, false);
  std::vector<float> g = values(grad_of(x));
  EXPECT_NEAR(g[0], 2 * (2 * 1.0f + std::exp(1.0f)), 1e-5);
  EXPECT_NEAR(g[1], 2 * (2 * -2.0f + std::exp(-2.0f)), 1e-5);
}

TEST(AutogradEngine, AccumulatesAcrossCalls) {
  Tensor x = leaf({1.0f, 2.0f, 3.0f});
  for (int i = 0; i < 3; ++i) {
    Tensor roots[1] = {sum(eager::binary_scalar(op("mul_scalar"), x, Scalar(2.0)))};
    ag::backward(roots, {}, false);
  }
  EXPECT_EQ(values(grad_of(x)), (std::vector<float>{6, 6, 6}));
}

TEST(AutogradEngine, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({1.0f});
  Tensor y = sum(eager::unary(op("exp"), x));
  Tensor roots[1] = {y};
  ag::backward(roots, {}, /*retain_graph=*/true);
  ag::backward(roots, {}, /*retain_graph=*/false);
  EXPECT_NEAR(values(grad_of(x))[0], 2 * std::exp(1.0f), 1e-5);
  try {
    ag::backward(roots, {}, false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("backward through the graph a second time"), std::string::npos);
  }
}

TEST(AutogradEngine, GradCapturesWithoutAccumulating) {
  Tensor x = leaf({1.0f, 2.0f});
  Tensor w = leaf({3.0f, 4.0f});
  Tensor y = sum(eager::binary(op("mul"), x, w));
  Tensor outs[1] = {y}, ins[2] = {x, w};
  std::vector<Tensor> g = ag::grad(outs, ins, {}, false, false);
  EXPECT_EQ(values(g[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(values(g[1]), (std::vector<float>{1, 2}));
  EXPECT_FALSE(grad_of(x).defined());
}

TEST(AutogradEngine, HookReplacesGradient) {
  Tensor x = leaf({1.0f, 1.0f});
  ag::tensor_hooks(x)->add([](const Tensor& g) { return eager::binary_scalar(eager::op("mul_scalar"), g, Scalar(3.0)); });
  Tensor roots[1] = {sum(x)};
  ag::backward(roots, {}, false);
  EXPECT_EQ(values(grad_of(x)), (std::vector<float>{3, 3}));
}

TEST(AutogradEngine, InPlaceOnLeafRaisesAndVersionChecks) {
  Tensor x = leaf({1.0f});
  Tensor one = eager::full({1}, Scalar(1.0), DType::kFloat32);
  Tensor in[2] = {x, one};
  EXPECT_THROW(eager::inplace(op("add"), in), Error);
  Tensor e = eager::unary(op("exp"), x);
  Tensor in2[2] = {e, one};
  eager::inplace(op("add"), in2);
  EXPECT_EQ(e.storage()->version(), 1u);
  Tensor roots[1] = {sum(e)};
  EXPECT_THROW(ag::backward(roots, {}, false), Error);
}

TEST(AutogradEngine, NoGradRecordsNothing) {
  Tensor x = leaf({1.0f});
  eager::GradModeGuard off(false);
  Tensor y = eager::unary(op("exp"), x);
  EXPECT_FALSE(y.impl()->requires_grad());
  EXPECT_EQ(ag::grad_fn(y), nullptr);
}

}  // namespace
}  // namespace rill
