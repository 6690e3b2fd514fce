// _fused_elementwise (ops/fused.h, kernels/cpu/fused.cpp): a program run tile by tile gives what its steps give
// one after the other in eager, for flat and row tiles, the last shorter tile, broadcast and strided inputs,
// 0-dim shapes and values of other dtypes between steps; its text round-trips and bad programs raise.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/ops/fused.h"
#include "rill/util/error.h"
#include "rill/util/parallel.h"
#include "../values.h"

namespace rill {
namespace {

using fused::Program;
using fused::Ref;

Ref e(int32_t k) { return Ref{false, k}; }
Ref s(int32_t k) { return Ref{true, k}; }

fused::Step step(const char* op, std::vector<Ref> inputs, std::vector<AttrValue> attrs = {},
                 std::vector<Scalar> scalars = {}) {
  return fused::Step{&eager::op(op), std::move(inputs), make_attrs(std::move(attrs)), std::move(scalars)};
}

std::vector<Tensor> run_fused(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<AttrValue> attrs;
  attrs.emplace_back(fused::encode(p));
  return eager::call(eager::op(std::string(fused::kOpName)), inputs, {}, make_attrs(std::move(attrs)));
}

// The steps one by one, each its own eager op call.
std::vector<Tensor> run_steps(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values;
  for (const fused::Step& st : p.steps) {
    std::vector<Tensor> ins;
    for (const Ref& r : st.inputs) ins.push_back(r.step ? values[r.index] : inputs[r.index]);
    values.push_back(eager::call1(*st.op, ins, st.scalars, st.attrs));
  }
  std::vector<Tensor> out;
  for (int32_t o : p.outputs) out.push_back(values[o]);
  return out;
}

void expect_same(const Program& p, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> got = run_fused(p, inputs), want = run_steps(p, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
    ASSERT_EQ(got[k].dtype(), want[k].dtype()) << "output " << k;
    const std::vector<double> a = test::values<double>(eager::to_dtype(got[k], DType::kFloat64));
    const std::vector<double> b = test::values<double>(eager::to_dtype(want[k], DType::kFloat64));
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-6 * (1 + std::abs(b[i]))) << "output " << k << " element " << i;
  }
}

// A gelu chain over two dense inputs: flat tiles of 2048, the last one shorter; two values returned.
Program gelu_chain() {
  Program p;
  p.num_inputs = 2;
  p.steps.push_back(step("add", {e(0), e(1)}));
  p.steps.push_back(step("mul_scalar", {s(0)}, {}, {Scalar(0.5)}));
  p.steps.push_back(step("gelu", {s(1)}, {std::string("tanh")}));
  p.steps.push_back(step("sub", {s(2), e(0)}));
  p.outputs = {3, 2};
  return p;
}

TEST(FusedElementwise, FlatTilesMatchTheStepsOneByOne) {
  for (int64_t n : {1, 7, 2048, 2 * 2048 + 5, 100003}) {
    SCOPED_TRACE(n);
    expect_same(gelu_chain(), {eager::randn({n}, DType::kFloat32), eager::randn({n}, DType::kFloat32)});
  }
}

TEST(FusedElementwise, FlatTilesOnOneThread) {
  const int threads = parallel::num_threads();
  parallel::set_num_threads(1);
  expect_same(gelu_chain(), {eager::randn({50000}, DType::kFloat32), eager::randn({50000}, DType::kFloat32)});
  parallel::set_num_threads(threads);
}

// Row tiles: a transposed (strided) input, a bias broadcast along dim 0, a 0-dim tensor, a bool value between
// steps; 129 elements a row, so 15 rows a tile and a last tile of 7.
TEST(FusedElementwise, RowTilesWithBroadcastStridedAndBoolValues) {
  Program p;
  p.num_inputs = 3;
  p.steps.push_back(step("add", {e(0), e(1)}));
  p.steps.push_back(step("relu", {s(0)}));
  p.steps.push_back(step("gt_scalar", {e(0)}, {}, {Scalar(0.0)}));
  p.steps.push_back(step("where", {s(2), s(1), e(2)}));
  p.outputs = {3, 1};
  const Tensor x = eager::transpose(eager::randn({129, 37}, DType::kFloat32), 0, 1);
  ASSERT_FALSE(x.meta()->contiguous);
  expect_same(p, {x, eager::randn({129}, DType::kFloat32), eager::full({}, Scalar(-3.0), DType::kFloat32)});
  // A column broadcast along dim 1 and a [1, 129] row: both read by rows.
  Program q;
  q.num_inputs = 3;
  q.steps.push_back(step("mul", {e(0), e(1)}));
  q.steps.push_back(step("sub", {s(0), e(2)}));
  q.steps.push_back(step("exp", {s(1)}));
  q.outputs = {2};
  expect_same(q, {eager::randn({300, 129}, DType::kFloat32), eager::randn({300, 1}, DType::kFloat32),
                  eager::randn({1, 129}, DType::kFloat32)});
}

TEST(FusedElementwise, ZeroDimAndEmptyShapes) {
  Program p;
  p.num_inputs = 1;
  p.steps.push_back(step("exp", {e(0)}));
  p.steps.push_back(step("neg", {s(0)}));
  p.outputs = {1};
  expect_same(p, {eager::full({}, Scalar(0.25), DType::kFloat32)});
  expect_same(p, {eager::randn({0, 5}, DType::kFloat32)});
  expect_same(p, {eager::randn({3, 0}, DType::kFloat32)});
}

TEST(FusedElementwise, FloatSixtyFourAndCasts) {
  Program p;
  p.num_inputs = 1;
  p.steps.push_back(step("cast", {e(0)}, {DType::kFloat64}));
  p.steps.push_back(step("tanh", {s(0)}));
  p.steps.push_back(step("cast", {s(1)}, {DType::kFloat32}));
  p.outputs = {2, 1};
  expect_same(p, {eager::randn({64, 70}, DType::kFloat32)});
}

TEST(FusedElementwise, TextRoundTrips) {
  Program p = gelu_chain();
  const std::string text = fused::encode(p);
  const Program back = fused::decode(text);
  ASSERT_EQ(back.steps.size(), p.steps.size());
  EXPECT_EQ(back.outputs, p.outputs);
  EXPECT_EQ(back.num_inputs, p.num_inputs);
  for (size_t j = 0; j < p.steps.size(); ++j) {
    EXPECT_EQ(back.steps[j].op, p.steps[j].op);
    EXPECT_EQ(back.steps[j].inputs, p.steps[j].inputs);
    EXPECT_EQ(back.steps[j].attrs.get(), p.steps[j].attrs.get());  // interned: equal attrs are one symbol
    ASSERT_EQ(back.steps[j].scalars.size(), p.steps[j].scalars.size());
    for (size_t k = 0; k < p.steps[j].scalars.size(); ++k)
      EXPECT_EQ(back.steps[j].scalars[k].to_double(), p.steps[j].scalars[k].to_double());
  }
  EXPECT_EQ(fused::encode(back), text);
}

TEST(FusedElementwise, BadProgramsRaise) {
  const std::string good = fused::encode(gelu_chain());
  EXPECT_THROW(fused::decode(good.substr(0, good.size() / 2)), Error);
  EXPECT_THROW(fused::decode(good + "1 "), Error);
  EXPECT_THROW(fused::decode(""), Error);
  // A step that is not elementwise.
  Program p;
  p.num_inputs = 1;
  p.steps.push_back(step("exp", {e(0)}));
  p.outputs = {0};
  std::string text = fused::encode(p);
  text.replace(text.find("3:exp"), 5, "6:matmul");
  EXPECT_THROW(fused::decode(text), Error);
  // A step that would convert its inputs (int64 + float32): the trace makes conversions ops of their own.
  Program c;
  c.num_inputs = 2;
  c.steps.push_back(step("add", {e(0), e(1)}));
  c.outputs = {0};
  EXPECT_THROW(run_fused(c, {eager::full({4}, Scalar(int64_t{1}), DType::kInt64), eager::randn({4}, DType::kFloat32)}),
               Error);
  // The wrong number of inputs.
  EXPECT_THROW(run_fused(gelu_chain(), {eager::randn({4}, DType::kFloat32)}), Error);
}

}  // namespace
}  // namespace rill
