// eager/: op calls end to end through the VM (elementwise, casts, views, copies).
#include <gtest/gtest.h>

#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/error.h"

#include "../values.h"

namespace rill {
namespace {

using test::values;

TEST(Eager, BroadcastAddWithPromotion) {
  Tensor a = eager::full({2, 1}, Scalar(1.5), DType::kFloat32);
  Tensor b = eager::arange(Scalar(int64_t{0}), Scalar(int64_t{3}), Scalar(int64_t{1}), std::nullopt);
  Tensor c = eager::binary(eager::op("add"), a, b);
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(c), (std::vector<float>{1.5, 2.5, 3.5, 1.5, 2.5, 3.5}));
}

TEST(Eager, ScalarOpsAndReverse) {
  Tensor a = eager::arange(Scalar(int64_t{1}), Scalar(int64_t{4}), Scalar(int64_t{1}), std::nullopt);
  Tensor r = eager::binary_scalar(eager::op("rsub_scalar"), a, Scalar(int64_t{10}));
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>(r), (std::vector<int64_t>{9, 8, 7}));
  Tensor d = eager::binary_scalar(eager::op("div_scalar"), a, Scalar(int64_t{2}));
  EXPECT_EQ(d.dtype(), DType::kFloat32);
  EXPECT_EQ(values<float>(d), (std::vector<float>{0.5, 1.0, 1.5}));
}

TEST(Eager, NonContiguousInputsAndInPlaceCopy) {
  Tensor x = eager::reshape(eager::arange(Scalar(int64_t{0}), Scalar(int64_t{6}), Scalar(int64_t{1}),
                                          DType::kFloat64),
                            {2, 3});
  Tensor t = eager::transpose(x, 0, 1);  // 3x2, strides (1, 3)
  Tensor y = eager::unary(eager::op("neg"), t);
  EXPECT_EQ(values<double>(y), (std::vector<double>{-0, -3, -1, -4, -2, -5}));
  // Write through a strided view.
  Tensor col = eager::select(x, 1, 1);
  eager::fill_(col, Scalar(9.0));
  EXPECT_EQ(values<double>(x), (std::vector<double>{0, 9, 2, 3, 9, 5}));
  eager::copy_(x, eager::full({3}, Scalar(int64_t{7}), DType::kInt32));
  EXPECT_EQ(values<double>(x), (std::vector<double>(6, 7.0)));
}

TEST(Eager, CastsRoundTrip) {
  Tensor f = eager::full({4}, Scalar(2.75), DType::kFloat32);
  EXPECT_EQ(values<int32_t>(eager::to_dtype(f, DType::kInt32)), (std::vector<int32_t>(4, 2)));
  Tensor h = eager::to_dtype(f, DType::kFloat16);
  EXPECT_EQ(values<float>(eager::to_dtype(h, DType::kFloat32)), (std::vector<float>(4, 2.75f)));
  EXPECT_EQ(values<bool>(eager::to_dtype(f, DType::kBool)), (std::vector<bool>(4, true)));
}

TEST(Eager, ErrorsAreTyped) {
  Tensor a = eager::full({3}, Scalar(1.0), DType::kFloat32);
  Tensor b = eager::full({4}, Scalar(1.0), DType::kFloat32);
  EXPECT_THROW(eager::binary(eager::op("add"), a, b), Error);
  Tensor i = eager::full({3}, Scalar(int64_t{1}), DType::kInt64);
  try {
    eager::call_into(eager::op("div"), std::vector<Tensor>{i, i}, {}, empty_attrs(), i);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("can't be cast"), std::string::npos);
  }
  // an error found while the kernel runs reaches the reader typed: mvlgamma(x, p) needs every x > (p - 1) / 2
  Tensor small = eager::full({2}, Scalar(0.1), DType::kFloat32);
  try {
    values<float>(eager::call1(eager::op("mvlgamma"), {&small, 1}, {}, make_attrs({int64_t{3}})));
    FAIL() << "expected mvlgamma to raise";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
  }
  // integers to negative integer powers: PyTorch's values, 1 / a^-b truncated
  Tensor n = eager::full({2}, Scalar(int64_t{2}), DType::kInt64);
  Tensor neg = eager::full({2}, Scalar(int64_t{-1}), DType::kInt64);
  EXPECT_EQ(values<int64_t>(eager::binary(eager::op("pow"), n, neg)), (std::vector<int64_t>{0, 0}));
}

TEST(Eager, RandomIsSeedable) {
  eager::manual_seed(123);
  auto a = values<float>(eager::randn({1000}, DType::kFloat32));
  eager::manual_seed(123);
  auto b = values<float>(eager::randn({1000}, DType::kFloat32));
  EXPECT_EQ(a, b);
  double mean = 0;
  for (float v : a) mean += v;
  EXPECT_LT(std::abs(mean / 1000), 0.15);
  auto u = values<float>(eager::rand({1000}, DType::kFloat32));
  for (float v : u) ASSERT_TRUE(v >= 0.0f && v < 1.0f);
}

}  // namespace
}  // namespace rill
