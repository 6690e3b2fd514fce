// autograd/record.cpp: ops record at eager's one call() (Note [Recording] in eager/grad_mode.h). The recorder
// is installed here, before any test of the binary runs, as the Python module does at import.
#include <gtest/gtest.h>

#include "rill/autograd/engine.h"
#include "rill/autograd/node.h"
#include "rill/eager/functional.h"
#include "rill/eager/math.h"

namespace rill {
namespace {

const bool installed = (autograd::install(), true);

Tensor leaf(const Shape& shape) {
  Tensor t = eager::full(shape, Scalar(1.5), DType::kFloat32);
  t.impl()->set_requires_grad(true);
  return t;
}

std::string node_name(const Tensor& t) {
  auto fn = autograd::grad_fn(t);
  return fn ? fn->name() : "";
}

TEST(Recorder, EveryCallRecordsItsRuleWhenAnInputRequiresGrad) {
  ASSERT_TRUE(installed);
  Tensor x = leaf({3});
  EXPECT_EQ(node_name(eager::mul(x, x)), "MulBackward0");
  EXPECT_EQ(node_name(eager::sum(x, {}, false)), "SumBackward0");
  EXPECT_EQ(node_name(eager::sum(x, {0}, false)), "SumBackward1");
  Tensor c = eager::full({3}, Scalar(2.0), DType::kFloat32);
  EXPECT_FALSE(eager::mul(c, c).impl()->requires_grad());
  eager::GradModeGuard off(false);
  EXPECT_FALSE(eager::mul(x, x).impl()->requires_grad());
}

TEST(Recorder, ViewsRecordTheirBaseAndTheirRule) {
  Tensor x = leaf({2, 3});
  Tensor v = eager::transpose(x, 0, 1);
  EXPECT_EQ(node_name(v), "TransposeBackward0");
  AutogradMeta* m = autograd::find_meta(v);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->view_base.is_same(x));
  // A view of a tensor that does not require grad still knows its base, for a later in-place write through it.
  Tensor c = eager::full({2, 3}, Scalar(0.0), DType::kFloat32);
  Tensor s = eager::select(c, 0, 1);
  EXPECT_TRUE(autograd::find_meta(s)->view_base.is_same(c));
  eager::copy_(s, eager::select(x, 0, 0));
  EXPECT_EQ(node_name(c), "CopySlices");
}

TEST(Recorder, ACompositeOpIsOneNodeAndACompositionIsItsPieces) {
  Tensor x = leaf({4});
  EXPECT_EQ(node_name(eager::logsumexp(x, {0}, false)), "LogsumexpBackward0");
  EXPECT_EQ(node_name(eager::matmul(x, x)), "ViewBackward0");  // 1-D @ 1-D: a [1, 1] matmul viewed as a scalar
  EXPECT_EQ(node_name(eager::stack(std::vector<Tensor>{x, x}, 0)), "CatBackward0");
}

TEST(Recorder, AnInPlaceWriteRebasesHistoryAndRefusesALeaf) {
  Tensor x = leaf({3});
  Tensor y = eager::mul(x, Scalar(2.0));
  static const OpSchema& add = eager::op("add_scalar");
  Scalar one[1] = {Scalar(1.0)};
  eager::inplace(add, {&y, 1}, one);
  EXPECT_EQ(node_name(y), "AddBackward0");
  EXPECT_THROW(eager::inplace(add, {&x, 1}, one), Error);
}

}  // namespace
}  // namespace rill
