// Convolution and pooling (ops/conv.cpp, ops/pool.cpp, kernels/cpu/conv.cpp,
// kernels/cpu/pool.cpp, eager/conv.cpp) on small cases computed by hand, in
// float32 (oneDNN) and float64 (im2col + BLAS), and the shape errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/eager/functional.h"

namespace rill {
namespace {

Tensor from_values(const Shape& shape, const std::vector<double>& values, DType dtype) {
  Tensor t = eager::empty(shape, dtype);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kFloat32)
      static_cast<float*>(t.data_ptr())[i] = static_cast<float>(values[i]);
    else
      static_cast<double*>(t.data_ptr())[i] = values[i];
  }
  return t;
}

std::vector<double> values_of(const Tensor& t) {
  eager::wait_readable(t);
  EXPECT_TRUE(t.is_contiguous());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = t.dtype() == DType::kFloat32 ? static_cast<const float*>(t.data_ptr())[i]
                                          : static_cast<const double*>(t.data_ptr())[i];
  return out;
}

class ConvTest : public ::testing::TestWithParam<DType> {};

// x = 1..9 as a 3x3 image; w = [[1, 0], [0, -1]]: each output is x[i][j] - x[i+1][j+1].
TEST_P(ConvTest, TwoByTwoKernelByHand) {
  const DType dt = GetParam();
  Tensor x = from_values({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, dt);
  Tensor w = from_values({1, 1, 2, 2}, {1, 0, 0, -1}, dt);
  Tensor b = from_values({1}, {0.5}, dt);
  Tensor y = eager::conv2d(x, w, b, {1}, {0}, {1}, 1);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(y), (std::vector<double>{-3.5, -3.5, -3.5, -3.5}));

  // padding 1, stride 2: windows start at (-1, -1), (-1, 1), (1, -1), (1, 1); zeros outside.
  Tensor y2 = eager::conv2d(x, w, std::nullopt, {2}, {1}, {1}, 1);
  EXPECT_EQ(values_of(y2), (std::vector<double>{-1, -3, -7, -4}));

  // Gradients for grad_output = ones: dx spreads w over each window, dw sums each window.
  Tensor gy = from_values({1, 1, 2, 2}, {1, 1, 1, 1}, dt);
  Tensor dx = eager::conv2d_backward_input(gy, w, {1, 1, 3, 3}, {1}, {0}, {1}, 1);
  EXPECT_EQ(values_of(dx), (std::vector<double>{1, 1, 0, 1, 0, -1, 0, -1, -1}));
  Tensor dw = eager::conv2d_backward_weight(gy, x, {1, 1, 2, 2}, {1}, {0}, {1}, 1);
  EXPECT_EQ(values_of(dw), (std::vector<double>{12, 16, 24, 28}));
  EXPECT_EQ(values_of(eager::conv_backward_bias(gy, 2)), (std::vector<double>{4}));
}

// Two groups of one channel each: each output channel sees only its own input channel.
TEST_P(ConvTest, GroupsKeepChannelsApart) {
  const DType dt = GetParam();
  Tensor x = from_values({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40}, dt);
  Tensor w = from_values({2, 1, 1, 1}, {2, -1}, dt);
  Tensor y = eager::conv2d(x, w, std::nullopt, {1}, {0}, {1}, 2);
  EXPECT_EQ(values_of(y), (std::vector<double>{2, 4, 6, 8, -10, -20, -30, -40}));
}

TEST_P(ConvTest, PoolingByHand) {
  const DType dt = GetParam();
  Tensor x = from_values({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, dt);
  auto [values, indices] = eager::max_pool2d_with_indices(x, {2}, {1}, {0}, {1}, false);
  EXPECT_EQ(values_of(values), (std::vector<double>{5, 6, 8, 9}));
  eager::wait_readable(indices);
  const int64_t* idx = static_cast<const int64_t*>(indices.data_ptr());
  EXPECT_EQ((std::vector<int64_t>(idx, idx + 4)), (std::vector<int64_t>{4, 5, 7, 8}));
  Tensor avg = eager::avg_pool2d(x, {2}, {1}, {0}, false, true, std::nullopt);
  EXPECT_EQ(values_of(avg), (std::vector<double>{3, 4, 6, 7}));
  Tensor gx = eager::max_pool2d_backward(from_values({1, 1, 2, 2}, {1, 2, 3, 4}, dt), indices, {1, 1, 3, 3});
  EXPECT_EQ(values_of(gx), (std::vector<double>{0, 0, 0, 0, 1, 2, 0, 3, 4}));
  Tensor g = eager::adaptive_avg_pool2d(x, {1});
  EXPECT_EQ(values_of(g), (std::vector<double>{5}));
}

// values repeated n times (one pooling plane per copy).
std::vector<double> repeat(const std::vector<double>& values, int64_t n) {
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), values.begin(), values.end());
  return out;
}

// max_pool2d_with_workspace and its backward on 256 copies of one plane, enough for oneDNN in float32 (its
// workspace) and the loops in float64 (theirs; Note [Pooling on oneDNN]): the gradient goes to each maximum.
TEST_P(ConvTest, MaxPoolWorkspaceByHand) {
  const DType dt = GetParam();
  constexpr int64_t n = 256;
  Tensor x = from_values({1, n, 3, 3}, repeat({1, 9, 3, 4, 5, 6, 7, 8, 2}, n), dt);
  auto [values, workspace] = eager::max_pool2d_with_workspace(x, {2}, {1}, {0}, {1}, false);
  EXPECT_EQ(values_of(values), repeat({9, 9, 8, 8}, n));
  EXPECT_EQ(workspace.dtype(), DType::kUInt8);
  EXPECT_EQ(workspace.shape(), (Shape{1, n, 2, 2}));
  Tensor gy = from_values({1, n, 2, 2}, repeat({1, 2, 3, 4}, n), dt);
  Tensor gx = eager::max_pool2d_with_workspace_backward(gy, workspace, {1, n, 3, 3}, {2}, {1}, {0}, {1}, false);
  EXPECT_EQ(values_of(gx), repeat({0, 3, 0, 0, 0, 0, 0, 7, 0}, n));
  // padding 1, ceil_mode: 3x3 windows at stride 2 starting at -1 and 1 (the second past the input's end).
  auto [v2, ws2] = eager::max_pool2d_with_workspace(x, {3}, {2}, {1}, {1}, true);
  EXPECT_EQ(values_of(v2), repeat({9, 9, 8, 8}, n));
  Tensor gx2 = eager::max_pool2d_with_workspace_backward(gy, ws2, {1, n, 3, 3}, {3}, {2}, {1}, {1}, true);
  EXPECT_EQ(values_of(gx2), repeat({0, 3, 0, 0, 0, 0, 0, 7, 0}, n));
  // More than 255 elements per window: an int32 workspace.
  Tensor big = eager::full({1, 16, 16, 16}, 1.0, dt);
  auto [v3, ws3] = eager::max_pool2d_with_workspace(big, {16}, {}, {0}, {1}, false);
  EXPECT_EQ(ws3.dtype(), DType::kInt32);
  Tensor gx3 = eager::max_pool2d_with_workspace_backward(v3, ws3, {1, 16, 16, 16}, {16}, {}, {0}, {1}, false);
  EXPECT_EQ(values_of(eager::conv_backward_bias(gx3, 2)), std::vector<double>(16, 1.0));  // a 1 per plane
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ConvTest, ::testing::Values(DType::kFloat32, DType::kFloat64));

TEST(ConvErrors, MaxPoolWorkspaceChecks) {
  Tensor x = eager::full({1, 2, 4, 4}, 1.0, DType::kFloat64);
  auto [values, workspace] = eager::max_pool2d_with_workspace(x, {2}, {}, {0}, {1}, false);
  // A workspace of another window's size.
  EXPECT_THROW(eager::max_pool2d_with_workspace_backward(values, workspace, {1, 2, 4, 4}, {2}, {1}, {0}, {1}, false),
               Error);
  // The loop's workspace holds window offsets; one past the window is an IndexError at run time.
  Tensor bad = eager::full({1, 2, 2, 2}, 7.0, DType::kUInt8);
  Tensor gx = eager::max_pool2d_with_workspace_backward(values, bad, {1, 2, 4, 4}, {2}, {}, {0}, {1}, false);
  try {
    eager::wait_readable(gx);
    FAIL() << "expected an index error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIndex);
    EXPECT_NE(std::string(e.what()).find("[max_pool2d_with_workspace_backward] workspace entry 7"), std::string::npos)
        << e.what();
  }
}

TEST(ConvErrors, MessagesNameTheOp) {
  Tensor x = eager::full({1, 3, 4, 4}, 1.0, DType::kFloat32);
  try {
    eager::conv2d(x, eager::full({2, 2, 3, 3}, 1.0, DType::kFloat32), std::nullopt, {1}, {0}, {1}, 1);
    FAIL() << "expected a channel mismatch error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("[conv2d] Given groups=1"), std::string::npos) << e.what();
  }
  try {
    eager::conv2d(x, eager::full({2, 3, 5, 5}, 1.0, DType::kFloat32), std::nullopt, {1}, {0}, {1}, 1);
    FAIL() << "expected a kernel-size error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Kernel size can't be greater"), std::string::npos) << e.what();
  }
  EXPECT_THROW(eager::max_pool2d_with_indices(x, {5}, {}, {0}, {1}, false), Error);
}

}  // namespace
}  // namespace rill
