// ops/: type promotion, views, the registry and the inference cache.
#include <gtest/gtest.h>

#include "rill/comm/collectives.h"
#include "rill/eager/functional.h"
#include "rill/ops/type_promotion.h"
#include "rill/ops/view.h"
#include "rill/util/error.h"

namespace rill {
namespace {

MetaSym meta(const Shape& s, DType t) { return make_contiguous_meta(s, t); }

TEST(TypePromotion, CategoriesDecide) {
  MetaSym i64 = meta({3}, DType::kInt64), f16 = meta({3}, DType::kFloat16), u8 = meta({3}, DType::kUInt8);
  MetaSym f64_0d = meta({}, DType::kFloat64), i32_0d = meta({}, DType::kInt32);
  // A 0-dim tensor of the same category does not widen.
  EXPECT_EQ(result_type(std::vector<MetaSym>{f16, f64_0d}, {}), DType::kFloat16);
  EXPECT_EQ(result_type(std::vector<MetaSym>{u8, i32_0d}, {}), DType::kUInt8);
  // A higher category does.
  EXPECT_EQ(result_type(std::vector<MetaSym>{i64, f64_0d}, {}), DType::kFloat64);
  // Python numbers: float -> default float, int keeps the tensor's int type.
  EXPECT_EQ(result_type(std::vector<MetaSym>{i64}, std::vector<Scalar>{Scalar(2.5)}), DType::kFloat32);
  EXPECT_EQ(result_type(std::vector<MetaSym>{u8}, std::vector<Scalar>{Scalar(int64_t{300})}), DType::kUInt8);
  EXPECT_EQ(result_type(std::vector<MetaSym>{meta({2}, DType::kBool)}, std::vector<Scalar>{Scalar(int64_t{1})}),
            DType::kInt64);
}

TEST(View, ViewNeedsCompatibleStrides) {
  TensorMeta m = *meta({2, 3, 4}, DType::kFloat32);
  auto t = view::transpose(m, 0, 2);
  EXPECT_EQ(t.meta->shape, (Shape{4, 3, 2}));
  EXPECT_EQ(t.meta->strides, (Strides{1, 4, 12}));
  EXPECT_FALSE(view::view(*t.meta, {24}).has_value());
  EXPECT_TRUE(view::view(m, {6, -1}).has_value());
  EXPECT_EQ(view::view(m, {6, -1})->meta->shape, (Shape{6, 4}));
  EXPECT_THROW(view::view(m, {5, -1}), Error);
  auto s = view::slice(m, 2, 1, std::nullopt, 2);
  EXPECT_EQ(s.meta->shape, (Shape{2, 3, 2}));
  EXPECT_EQ(s.offset, 1);
  EXPECT_EQ(s.meta->strides, (Strides{12, 4, 2}));
  EXPECT_THROW(view::select(m, 1, 3), Error);
  EXPECT_EQ(view::expand(*meta({3, 1}, DType::kFloat32), {2, 3, 4}).meta->strides, (Strides{0, 1, 0}));
}

TEST(InferCache, SameMetasInferOnce) {
  const OpSchema& add = eager::op("add");
  MetaSym a = meta({4, 4}, DType::kFloat32);
  std::vector<MetaSym> in{a, a};
  const InferResult& r1 = ops::infer_cached(add, in, {}, empty_attrs());
  size_t n = ops::infer_cache_size();
  const InferResult& r2 = ops::infer_cached(add, in, {}, empty_attrs());
  EXPECT_EQ(&r1, &r2);
  EXPECT_EQ(ops::infer_cache_size(), n);
  EXPECT_EQ(r1.outputs[0]->shape, (Shape{4, 4}));
}

TEST(StrictDtype, CachedInferenceIsRecheckedUnderStrictMode) {
  const OpSchema& add = eager::op("add");
  const OpSchema& sqrt = eager::op("sqrt");
  MetaSym f32 = meta({5, 3}, DType::kFloat32), f64 = meta({5, 3}, DType::kFloat64), i8 = meta({5, 3}, DType::kInt8);
  std::vector<MetaSym> mixed{f32, f64}, same{f32, f32}, ints{i8};
  {
    StrictDtypeGuard off(false);
    EXPECT_EQ(ops::infer_cached(add, mixed, {}, empty_attrs()).outputs[0]->dtype, DType::kFloat64);
    EXPECT_TRUE(ops::infer_cached(add, mixed, {}, empty_attrs()).implicit_conversion);
    EXPECT_FALSE(ops::infer_cached(add, same, {}, empty_attrs()).implicit_conversion);
    EXPECT_EQ(ops::infer_cached(sqrt, ints, {}, empty_attrs()).outputs[0]->dtype, DType::kFloat32);
  }
  StrictDtypeGuard on(true);
  EXPECT_TRUE(strict_dtype());
  // Cached with the mode off, still rejected with it on.
  try {
    ops::infer_cached(add, mixed, {}, empty_attrs());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    EXPECT_STREQ(e.what(), "[add] strict dtype mode: operands are float32 and float64; convert explicitly, e.g. "
                           "input.to(rill.float64)");
  }
  EXPECT_THROW(ops::infer_cached(sqrt, ints, {}, empty_attrs()), Error);
  EXPECT_EQ(ops::infer_cached(add, same, {}, empty_attrs()).outputs[0]->dtype, DType::kFloat32);
  Scalar half[1] = {Scalar(0.5)};
  std::vector<MetaSym> one_int{i8};
  EXPECT_THROW(ops::infer_cached(eager::op("mul_scalar"), one_int, half, empty_attrs()), Error);
  Scalar two[1] = {Scalar(int64_t{2})};
  std::vector<MetaSym> one_float{f32};
  EXPECT_EQ(ops::infer_cached(eager::op("mul_scalar"), one_float, two, empty_attrs()).outputs[0]->dtype,
            DType::kFloat32);
}

TEST(StrictDtype, GuardRestoresTheThreadSetting) {
  EXPECT_EQ(strict_dtype_setting(), -1);
  {
    StrictDtypeGuard on(true);
    EXPECT_EQ(strict_dtype_setting(), 1);
    {
      StrictDtypeGuard off(false);
      EXPECT_FALSE(strict_dtype());
    }
    EXPECT_TRUE(strict_dtype());
  }
  EXPECT_EQ(strict_dtype_setting(), -1);
}

TEST(Registry, EveryOpHasACpuKernelAndInference) {
  eager::op("add");       // registers everything
  comm::register_kernels();  // and the comm layer's kernels, which its init sets
  for (const OpSchema* s : ops::all()) {
    EXPECT_NE(s->infer, nullptr) << s->name;
    // composite ops and views have none
    EXPECT_NE(s->kernel(DeviceType::kCPU) != nullptr, s->composite() || s->flags.view) << s->name;
  }
}

TEST(Signature, ParsesTypesDefaultsAndKeywordOnlyArguments) {
  Signature s = parse_signature("softplus(Tensor self, Scalar beta=1, Scalar threshold=20.5, *, int[2] k=[1, 2], "
                                "ScalarType? dtype=None, str mode=\"mean\", bool flag=True) -> Tensor");
  EXPECT_EQ(s.name, "softplus");
  ASSERT_EQ(s.args.size(), 7u);
  EXPECT_EQ(s.args[0].type, ArgType::kTensor);
  EXPECT_FALSE(s.args[0].default_value.has_value());
  EXPECT_EQ(std::get<int64_t>(*s.args[1].default_value), 1);
  EXPECT_DOUBLE_EQ(std::get<double>(*s.args[2].default_value), 20.5);
  EXPECT_FALSE(s.args[2].kwarg_only);
  EXPECT_TRUE(s.args[3].kwarg_only);
  EXPECT_EQ(s.args[3].type, ArgType::kIntList);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*s.args[3].default_value), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(s.args[4].optional);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*s.args[4].default_value));
  EXPECT_EQ(std::get<std::string>(*s.args[5].default_value), "mean");
  EXPECT_TRUE(std::get<bool>(*s.args[6].default_value));
  EXPECT_EQ(s.num_outputs, 1);
  // str() spells it canonically, and reads back to the same signature.
  EXPECT_EQ(parse_signature(s.str()).str(), s.str());
  const Signature max_dim = parse_signature("max_dim(Tensor self, int dim) -> (Tensor values, Tensor indices)");
  EXPECT_EQ(max_dim.num_outputs, 2);
  EXPECT_EQ(max_dim.output_names, (std::vector<std::string>{"values", "indices"}));
  EXPECT_EQ(max_dim.str(), "max_dim(Tensor self, int dim) -> (Tensor values, Tensor indices)");
  EXPECT_TRUE(parse_signature("f(Tensor self) -> (Tensor, Tensor)").output_names.empty());
  EXPECT_EQ(parse_signature("split(Tensor self, Tensor[] parts) -> Tensor[]").num_outputs, -1);
  EXPECT_EQ(parse_signature("split(Tensor self, Tensor[] parts) -> Tensor[]").args[1].type, ArgType::kTensorList);
}

TEST(Signature, BadTextRaisesNamingTheColumn) {
  for (const char* bad : {"f(Tensor self", "f(Tensr self) -> Tensor", "f(Tensor self, int k=1, int j) -> Tensor",
                          "f(int k=None) -> Tensor", "f(Tensor self) -> int", "f(Tensor a, Tensor a) -> Tensor",
                          "f(Tensor self) Tensor", "f(float[] x) -> Tensor", "f(Tensor a) -> (Tensor v, Tensor)"}) {
    try {
      parse_signature(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("column"), std::string::npos) << e.what();
    }
  }
}

TEST(Registry, InputsScalarsAndAttrsFollowFromTheSignature) {
  eager::op("add");
  const OpSchema& sp = ops::get("softplus");
  EXPECT_EQ(sp.num_inputs, 1);
  EXPECT_EQ(sp.num_scalars, 2);
  EXPECT_TRUE(sp.attr_names.empty());
  const OpSchema& sum = ops::get("sum");
  EXPECT_EQ(sum.attr_names, (std::vector<std::string>{"dim", "keepdim", "dtype"}));
  EXPECT_EQ(sum.attr_index("keepdim"), 1u);
  EXPECT_THROW(sum.attr_index("nope"), Error);
  EXPECT_EQ(ops::get("conv2d").num_inputs, -1);  // Tensor? bias
  EXPECT_EQ(ops::get("max_dim").signature.num_outputs, 2);
  // Views are ops too, inferred like any other.
  const OpSchema& t = ops::get("transpose");
  EXPECT_TRUE(t.flags.view);
  MetaSym in[1] = {make_contiguous_meta({2, 3}, DType::kFloat32)};
  const InferResult& r = ops::infer_cached(t, in, {}, make_attrs({int64_t{0}, int64_t{1}}));
  EXPECT_EQ(r.outputs[0]->shape, (Shape{3, 2}));
  EXPECT_EQ(r.outputs[0]->strides, (Strides{1, 3}));
  const InferResult& s1 = ops::infer_cached(ops::get("select"), in, {}, make_attrs({int64_t{1}, int64_t{2}}));
  EXPECT_EQ(s1.view_offset, 2);
  // Every op's signature reads back to itself.
  for (const OpSchema* s : ops::all()) EXPECT_EQ(parse_signature(s->signature.str()).str(), s->signature.str());
}

}  // namespace
}  // namespace rill
