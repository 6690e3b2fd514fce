// Reductions (ops/reduce.cpp, kernels/cpu/reduce.cpp, eager/reduce.cpp) against
// reference loops; expected values and errors follow PyTorch 2.x.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/parallel.h"

namespace rill {
namespace {

using eager::op;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A tensor holding values (converted to T), written directly into fresh memory.
template <typename T>
Tensor make(const std::vector<double>& values, const Shape& shape) {
  Tensor t = eager::empty(shape, kDTypeOf<T>);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  T* p = static_cast<T*>(t.data_ptr());
  for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  return t;
}

Tensor arange_f(int64_t n, const Shape& shape, DType dtype = DType::kFloat32) {
  return eager::reshape(eager::arange(int64_t{0}, n, int64_t{1}, dtype), shape);
}

// Values of a dense result, as doubles.
std::vector<double> values(const Tensor& t) {
  eager::wait_readable(t);
  EXPECT_TRUE(t.is_contiguous());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(static_cast<OpMath<T>>(p[i]));
  });
  return out;
}

// Any tensor's element at a multi-index, through its strides.
double at(const Tensor& t, const std::vector<int64_t>& idx) {
  eager::wait_readable(t);
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  return visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<OpMath<T>>(static_cast<const T*>(t.data_ptr())[off]));
  });
}

Tensor reduce(const OpSchema& o, const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
              std::optional<DType> dtype = std::nullopt) {
  return eager::reduce(o, x, dims, keepdim, dtype);
}

template <typename F>
ErrorKind error_kind(F f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "expected a rill::Error";
  return ErrorKind::kNotImplemented;
}

// Looks the ops up at test time (not during static initialisation).
class ReduceTest : public ::testing::Test {
 protected:
  const OpSchema& kSum = op("sum");
  const OpSchema& kMean = op("mean");
  const OpSchema& kAmax = op("amax");
  const OpSchema& kAmin = op("amin");
  const OpSchema& kArgmax = op("argmax");
  const OpSchema& kArgmin = op("argmin");
};

TEST_F(ReduceTest, SumAll) {
  Tensor s = reduce(kSum, arange_f(10, {2, 5}));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), DType::kFloat32);
  EXPECT_EQ(values(s), std::vector<double>{45});
  EXPECT_EQ(values(reduce(kSum, arange_f(10, {2, 5}), {}, true)), std::vector<double>{45});
  EXPECT_EQ(reduce(kSum, arange_f(10, {2, 5}), {}, true).shape(), (Shape{1, 1}));
}

TEST_F(ReduceTest, SumDimsKeepdimNegative) {
  Tensor x = arange_f(24, {2, 3, 4});
  Tensor s1 = reduce(kSum, x, {1}, true);
  EXPECT_EQ(s1.shape(), (Shape{2, 1, 4}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) want.push_back((i * 12 + k) * 3 + 4 + 8);
  EXPECT_EQ(values(s1), want);
  Tensor s2 = reduce(kSum, x, {-2});
  EXPECT_EQ(s2.shape(), (Shape{2, 4}));
  EXPECT_EQ(values(s2), want);
  // Two dims, given out of order and negative: sum over dims 0 and 2.
  Tensor s3 = reduce(kSum, x, {-1, 0});
  EXPECT_EQ(s3.shape(), (Shape{3}));
  std::vector<double> want3(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want3[j] += i * 12 + j * 4 + k;
  EXPECT_EQ(values(s3), want3);
  Tensor s4 = reduce(kSum, x, {0, 2}, true);
  EXPECT_EQ(s4.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(values(s4), want3);
  // Reducing no element-bearing dim: dims () means all.
  EXPECT_EQ(values(reduce(kSum, x)), std::vector<double>{276});
}

TEST_F(ReduceTest, NonContiguousInputs) {
  Tensor x = arange_f(24, {2, 3, 4});
  Tensor t = eager::transpose(x, 0, 2);  // [4, 3, 2]
  ASSERT_FALSE(t.is_contiguous());
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1}, {0}, {2}, {0, 2}, {}}) {
    for (const OpSchema* o : {&kSum, &kMean, &kAmax, &kAmin}) {
      Tensor r = reduce(*o, t, dims, true);
      std::vector<double> got = values(r);
      // Reference over the transposed view.
      std::vector<bool> red(3, dims.empty());
      for (int64_t d : dims) red[d] = true;
      size_t idx = 0;
      for (int64_t a = 0; a < (red[0] ? 1 : 4); ++a)
        for (int64_t b = 0; b < (red[1] ? 1 : 3); ++b)
          for (int64_t c = 0; c < (red[2] ? 1 : 2); ++c) {
            double sum = 0, mx = -1e9, mn = 1e9, n = 0;
            for (int64_t i = 0; i < 4; ++i)
              for (int64_t j = 0; j < 3; ++j)
                for (int64_t k = 0; k < 2; ++k) {
                  if ((!red[0] && i != a) || (!red[1] && j != b) || (!red[2] && k != c)) continue;
                  double v = at(t, {i, j, k});
                  sum += v, mx = std::max(mx, v), mn = std::min(mn, v), n += 1;
                }
            double want = o == &kSum ? sum : o == &kMean ? sum / n : o == &kAmax ? mx : mn;
            EXPECT_DOUBLE_EQ(got[idx++], want) << o->name << " dims size " << dims.size();
          }
    }
  }
  // Expanded (0-stride) input: [[0,1,2,3]] * 3.
  Tensor e = eager::expand(arange_f(4, {1, 4}), {3, 4});
  EXPECT_EQ(values(reduce(kSum, e, {0})), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(values(reduce(kSum, e, {1})), (std::vector<double>{6, 6, 6}));
  EXPECT_EQ(values(reduce(kSum, e)), std::vector<double>{18});
  // A strided slice (step 2 along the inner dim).
  Tensor sl = eager::slice(arange_f(24, {4, 6}), 1, 0, std::nullopt, 2);  // columns 0, 2, 4
  EXPECT_EQ(values(reduce(kSum, sl, {1})), (std::vector<double>{6, 24, 42, 60}));
  EXPECT_EQ(values(reduce(kSum, sl, {0})), (std::vector<double>{36, 44, 52}));
}

TEST_F(ReduceTest, ZeroDim) {
  Tensor x = eager::full({}, 3.5, DType::kFloat32);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {0}, {-1}}) {
    for (bool keepdim : {false, true}) {
      Tensor s = reduce(kSum, x, dims, keepdim);
      EXPECT_EQ(s.shape(), Shape{});
      EXPECT_EQ(values(s), std::vector<double>{3.5});
      EXPECT_EQ(values(reduce(kAmax, x, dims, keepdim)), std::vector<double>{3.5});
      EXPECT_EQ(values(reduce(kMean, x, dims, keepdim)), std::vector<double>{3.5});
      EXPECT_EQ(values(reduce(kArgmax, x, dims.empty() ? dims : std::vector<int64_t>{dims[0]}, keepdim)),
                std::vector<double>{0});
    }
  }
  auto [v, i] = eager::reduce_with_indices(op("max_dim"), x, 0, false);
  EXPECT_EQ(v.shape(), Shape{});
  EXPECT_EQ(values(v), std::vector<double>{3.5});
  EXPECT_EQ(values(i), std::vector<double>{0});
  EXPECT_EQ(error_kind([&] { reduce(kSum, x, {1}); }), ErrorKind::kIndex);
  EXPECT_EQ(error_kind([&] { reduce(kSum, x, {0, -1}); }), ErrorKind::kRuntime);
}

TEST_F(ReduceTest, Empty) {
  Tensor e = eager::empty({0, 3}, DType::kFloat32);
  Tensor s = reduce(kSum, e, {0});
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(values(s), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(reduce(kSum, e)), std::vector<double>{0});
  EXPECT_EQ(reduce(kSum, e, {1}).shape(), (Shape{0}));
  std::vector<double> m = values(reduce(kMean, e, {0}));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[2]));
  EXPECT_TRUE(std::isnan(values(reduce(kMean, e))[0]));
  EXPECT_EQ(values(reduce(kSum, eager::empty({0}, DType::kInt32))), std::vector<double>{0});
  // amax and friends have no identity.
  std::string msg;
  EXPECT_EQ(error_kind([&] { reduce(kAmax, e, {0}); }, &msg), ErrorKind::kIndex);
  EXPECT_EQ(msg, "[amax] Expected reduction dim 0 to have non-zero size.");
  EXPECT_EQ(reduce(kAmax, e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(reduce(kAmin, e, {1}, true).shape(), (Shape{0, 1}));
  EXPECT_EQ(error_kind([&] { reduce(kAmin, e); }), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind([&] { reduce(op("max"), e); }), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind([&] { reduce(kArgmax, e); }), ErrorKind::kIndex);
  EXPECT_EQ(error_kind([&] { reduce(kArgmin, e, {0}); }), ErrorKind::kIndex);
  EXPECT_EQ(reduce(kArgmax, e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(error_kind([&] { eager::reduce_with_indices(op("min_dim"), e, 0, false); }, &msg), ErrorKind::kIndex);
  EXPECT_EQ(msg, "[min] Expected reduction dim 0 to have non-zero size.");
  auto [v, i] = eager::reduce_with_indices(op("max_dim"), e, 1, false);
  EXPECT_EQ(v.shape(), (Shape{0}));
  EXPECT_EQ(i.dtype(), DType::kInt64);
}

TEST_F(ReduceTest, DtypePromotion) {
  Tensor xi = eager::arange(int64_t{0}, int64_t{10}, int64_t{1}, DType::kInt32);
  Tensor s = reduce(kSum, xi);
  EXPECT_EQ(s.dtype(), DType::kInt64);
  EXPECT_EQ(values(s), std::vector<double>{45});
  Tensor b = make<bool>({1, 0, 1, 1}, {4});
  EXPECT_EQ(reduce(kSum, b).dtype(), DType::kInt64);
  EXPECT_EQ(values(reduce(kSum, b)), std::vector<double>{3});
  EXPECT_EQ(values(reduce(kSum, b, {}, false, DType::kBool)), std::vector<double>{1});
  Tensor u = make<uint8_t>({200, 100}, {2});
  EXPECT_EQ(values(reduce(kSum, u)), std::vector<double>{300});
  EXPECT_EQ(values(reduce(kSum, u, {}, false, DType::kUInt8)), std::vector<double>{44});  // wraps
  Tensor sf = reduce(kSum, xi, {}, false, DType::kFloat32);
  EXPECT_EQ(sf.dtype(), DType::kFloat32);
  EXPECT_EQ(values(sf), std::vector<double>{45});
  // dtype= converts the input first: 1.7 + 2.7 -> 1 + 2.
  Tensor st = reduce(kSum, make<float>({1.7, 2.7}, {2}), {}, false, DType::kInt32);
  EXPECT_EQ(st.dtype(), DType::kInt32);
  EXPECT_EQ(values(st), std::vector<double>{3});
  // 16-bit floats accumulate in float.
  Tensor h = eager::full({3000}, 1.0, DType::kFloat16);
  EXPECT_EQ(values(reduce(kSum, h)), std::vector<double>{3000});
  Tensor bf = eager::full({1000}, 0.5, DType::kBFloat16);
  EXPECT_EQ(reduce(kMean, bf).dtype(), DType::kBFloat16);
  EXPECT_EQ(values(reduce(kMean, bf)), std::vector<double>{0.5});
  Tensor d = arange_f(5, {5}, DType::kFloat64);
  EXPECT_EQ(reduce(kSum, d).dtype(), DType::kFloat64);
  EXPECT_EQ(values(reduce(kMean, d)), std::vector<double>{2});
  // mean of integers needs a floating dtype.
  std::string msg;
  EXPECT_EQ(error_kind([&] { reduce(kMean, xi); }, &msg), ErrorKind::kType);
  EXPECT_EQ(msg.rfind("[mean] could not infer output dtype. Input dtype must be either a floating point or complex "
                      "dtype. Got: int32", 0), 0u) << msg;
  EXPECT_EQ(values(reduce(kMean, xi, {}, false, DType::kFloat32)), std::vector<double>{4.5});
  EXPECT_EQ(error_kind([&] { reduce(kMean, arange_f(3, {3}), {}, false, DType::kInt64); }), ErrorKind::kType);
  // amax keeps the dtype, bool included.
  EXPECT_EQ(reduce(kAmax, xi).dtype(), DType::kInt32);
  EXPECT_EQ(values(reduce(kAmax, b)), std::vector<double>{1});
  EXPECT_EQ(values(reduce(kAmin, b)), std::vector<double>{0});
  EXPECT_EQ(values(reduce(kAmin, make<int8_t>({5, -7, 3}, {3}))), std::vector<double>{-7});
  EXPECT_EQ(reduce(kArgmax, xi).dtype(), DType::kInt64);
}

TEST_F(ReduceTest, NaN) {
  Tensor x = make<float>({1, kNaN, 3, kNaN, -2}, {5});
  EXPECT_TRUE(std::isnan(values(reduce(kAmax, x))[0]));
  EXPECT_TRUE(std::isnan(values(reduce(kAmin, x))[0]));
  EXPECT_TRUE(std::isnan(values(reduce(kSum, x))[0]));
  EXPECT_EQ(values(reduce(kArgmax, x)), std::vector<double>{1});
  EXPECT_EQ(values(reduce(kArgmin, x)), std::vector<double>{1});
  auto [v, i] = eager::reduce_with_indices(op("max"), x, 0, false);
  EXPECT_TRUE(std::isnan(values(v)[0]));
  EXPECT_EQ(values(i), std::vector<double>{1});
  // NaN in the last lane of a long row, and down a column (outer plan).
  std::vector<double> big(1000, 1.0);
  big[999] = kNaN;
  EXPECT_TRUE(std::isnan(values(reduce(kAmax, make<float>(big, {1000})))[0]));
  EXPECT_EQ(values(reduce(kArgmin, make<double>(big, {1000}))), std::vector<double>{999});
  Tensor col = make<float>({1, 2, kNaN, 4, 5, kNaN}, {3, 2});
  std::vector<double> cmax = values(reduce(kAmax, col, {0}));
  EXPECT_TRUE(std::isnan(cmax[0]) && std::isnan(cmax[1]));
  EXPECT_EQ(values(reduce(kArgmax, col, {0})), (std::vector<double>{1, 2}));
  EXPECT_TRUE(std::isnan(values(reduce(kAmax, make<Half>({1, kNaN, 2}, {3})))[0]));
}

TEST_F(ReduceTest, TiesTakeTheFirst) {
  Tensor x = make<float>({1, 3, 3, 2}, {4});
  EXPECT_EQ(values(reduce(kArgmax, x)), std::vector<double>{1});
  EXPECT_EQ(values(reduce(kArgmin, make<int64_t>({2, 1, 1, 5}, {4}))), std::vector<double>{1});
  // Column reductions (outer plan): ties down dim 0.
  Tensor m = make<float>({1, 5, 2, 5, 5, 1, 2, 0}, {4, 2});
  auto [v, i] = eager::reduce_with_indices(op("max_dim"), m, 0, true);
  EXPECT_EQ(v.shape(), (Shape{1, 2}));
  EXPECT_EQ(values(v), (std::vector<double>{5, 5}));
  EXPECT_EQ(values(i), (std::vector<double>{2, 0}));
  auto [v2, i2] = eager::reduce_with_indices(op("min_dim"), m, -1, false);
  EXPECT_EQ(values(v2), (std::vector<double>{1, 2, 1, 0}));
  EXPECT_EQ(values(i2), (std::vector<double>{0, 0, 1, 1}));
  Tensor allsame = eager::full({7, 9}, 4.0, DType::kFloat32);
  EXPECT_EQ(values(reduce(kArgmax, allsame)), std::vector<double>{0});
  EXPECT_EQ(values(reduce(kArgmin, allsame, {1})), std::vector<double>(7, 0));
  EXPECT_EQ(values(reduce(kArgmin, allsame, {0})), std::vector<double>(9, 0));
  // bool max_dim (argmax rejects bool, like torch).
  auto [bv, bi] = eager::reduce_with_indices(op("max"), make<bool>({0, 1, 1}, {3}), 0, false);
  EXPECT_EQ(values(bv), std::vector<double>{1});
  EXPECT_EQ(values(bi), std::vector<double>{1});
}

TEST_F(ReduceTest, ArgmaxShapesAndOrder) {
  Tensor x = make<float>({4, 9, 2, 7, 1, 8}, {2, 3});
  EXPECT_EQ(reduce(kArgmax, x).shape(), Shape{});
  EXPECT_EQ(reduce(kArgmax, x, {}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(values(reduce(kArgmax, x)), std::vector<double>{1});
  EXPECT_EQ(values(reduce(kArgmax, x, {1})), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(reduce(kArgmin, x, {0}, true)), (std::vector<double>{0, 1, 0}));
  // Flattened index follows the logical order of a transposed view: [[4,7],[9,1],[2,8]].
  Tensor t = eager::transpose(x, 0, 1);
  EXPECT_EQ(values(reduce(kArgmax, t)), std::vector<double>{2});
  EXPECT_EQ(values(reduce(kArgmin, t)), std::vector<double>{3});
  EXPECT_EQ(values(reduce(kArgmax, t, {0})), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(reduce(kArgmax, t, {1})), (std::vector<double>{1, 0, 1}));
  auto [v, i] = eager::reduce_with_indices(op("max_dim"), t, 1, false);
  EXPECT_EQ(values(v), (std::vector<double>{7, 9, 8}));
  EXPECT_EQ(values(i), (std::vector<double>{1, 0, 1}));
}

TEST_F(ReduceTest, Errors) {
  Tensor x = arange_f(6, {2, 3});
  std::string msg;
  EXPECT_EQ(error_kind([&] { reduce(kSum, x, {0, 0}); }, &msg), ErrorKind::kRuntime);
  EXPECT_EQ(msg, "[sum] dim 0 appears multiple times in the list of dims");
  EXPECT_EQ(error_kind([&] { reduce(kMean, x, {1, -1}); }, &msg), ErrorKind::kRuntime);
  EXPECT_EQ(msg, "[mean] dim 1 appears multiple times in the list of dims");
  EXPECT_EQ(error_kind([&] { reduce(kAmax, x, {2}); }, &msg), ErrorKind::kIndex);
  EXPECT_EQ(msg.rfind("[amax] Dimension out of range", 0), 0u) << msg;
  EXPECT_EQ(error_kind([&] { reduce(kArgmax, x, {0, 1}); }), ErrorKind::kType);
  EXPECT_EQ(error_kind([&] { reduce(kArgmax, make<bool>({1, 0}, {2})); }), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind([&] { reduce(kAmax, x, {}, false, DType::kFloat64); }), ErrorKind::kType);
  EXPECT_EQ(error_kind([&] { reduce(op("max"), x, {0}); }), ErrorKind::kType);
  EXPECT_EQ(error_kind([&] { reduce(op("add"), x); }), ErrorKind::kValue);
  EXPECT_EQ(error_kind([&] { reduce(op("max_dim"), x); }), ErrorKind::kValue);
  EXPECT_EQ(error_kind([&] { eager::reduce_with_indices(kSum, x, 0, false); }), ErrorKind::kValue);
  EXPECT_EQ(error_kind([&] { eager::reduce_with_indices(op("max_dim"), x, -3, false); }), ErrorKind::kIndex);
  EXPECT_THROW(reduce(kSum, x, {5}), Error);
}

// Sum of n doubles, exactly enough for a reference.
double reference_sum(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  return static_cast<double>(s);
}

TEST_F(ReduceTest, LargeSumsAreAccurate) {
  eager::manual_seed(7);
  const int64_t n = 1 << 20;
  Tensor x = eager::rand({n}, DType::kFloat32);
  std::vector<double> xv = values(x);
  double want = reference_sum(xv);
  EXPECT_NEAR(values(reduce(kSum, x))[0], want, 1e-6 * want);
  EXPECT_NEAR(values(reduce(kMean, x))[0], want / n, 1e-6 * want / n);
  // Float16 accumulates in float: a float16 accumulator would stop growing at 2048.
  EXPECT_EQ(values(reduce(kSum, eager::full({40000}, 1.0, DType::kFloat16)))[0], 40000.0);

  // The same data in other layouts: a few long rows, a transposed matrix, columns, a strided row set.
  Tensor rows = eager::reshape(x, {4, n / 4});  // few outputs: split into segments
  std::vector<double> rs = values(reduce(kSum, rows, {1}));
  for (int r = 0; r < 4; ++r) {
    std::vector<double> part(xv.begin() + r * (n / 4), xv.begin() + (r + 1) * (n / 4));
    EXPECT_NEAR(rs[r], reference_sum(part), 1e-6 * reference_sum(part));
  }
  Tensor m = eager::reshape(x, {1024, 1024});
  std::vector<double> cols = values(reduce(kSum, m, {0}));        // outer plan
  std::vector<double> tcols = values(reduce(kSum, eager::transpose(m, 0, 1), {1}));  // same, transposed
  std::vector<double> rows2 = values(reduce(kSum, eager::transpose(m, 0, 1), {0}));
  for (int j = 0; j < 1024; j += 97) {
    double c = 0, r = 0;
    for (int i = 0; i < 1024; ++i) c += xv[i * 1024 + j], r += xv[j * 1024 + i];
    EXPECT_NEAR(cols[j], c, 1e-5 * c);
    EXPECT_NEAR(tcols[j], c, 1e-5 * c);
    EXPECT_NEAR(rows2[j], r, 1e-5 * r);
  }
  // Tall and thin: one column task, split by rows.
  Tensor tall = eager::reshape(x, {n / 4, 4});
  std::vector<double> tv = values(reduce(kSum, tall, {0}));
  for (int j = 0; j < 4; ++j) {
    double c = 0;
    for (int64_t i = 0; i < n / 4; ++i) c += xv[i * 4 + j];
    EXPECT_NEAR(tv[j], c, 1e-6 * c);
  }
  // Narrow rows read several at a time, with rows left over (odd widths, odd row counts).
  for (int64_t w : {3, 5, 100}) {
    for (int64_t rows : {int64_t{7}, int64_t{1001}, (n - 1) / w}) {
      Tensor narrow = eager::reshape(eager::slice(x, 0, 0, rows * w, 1), {rows, w});
      std::vector<double> nv = values(reduce(kSum, narrow, {0}));
      std::vector<double> mv = values(reduce(kAmax, narrow, {0}));
      for (int64_t j = 0; j < w; j += 2) {
        double c = 0, m = 0;
        for (int64_t i = 0; i < rows; ++i) c += xv[i * w + j], m = std::max(m, xv[i * w + j]);
        EXPECT_NEAR(nv[j], c, 1e-6 * c) << w << " " << rows;
        EXPECT_EQ(mv[j], m) << w << " " << rows;
      }
    }
  }
  // Dims that cannot merge: [256, 2, 2048] summed over 0 and 2 (inner rows, split by rows).
  Tensor odd = eager::reshape(x, {256, 2, 2048});
  std::vector<double> ov = values(reduce(kSum, odd, {0, 2}));
  for (int j = 0; j < 2; ++j) {
    double c = 0;
    for (int i = 0; i < 256; ++i)
      for (int k = 0; k < 2048; ++k) c += xv[(i * 2 + j) * 2048 + k];
    EXPECT_NEAR(ov[j], c, 1e-6 * c);
  }
  // amax / argmax over the long row and the transposed matrix agree with a scan.
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (xv[i] > xv[best]) best = i;
  EXPECT_EQ(values(reduce(kAmax, x))[0], xv[best]);
  EXPECT_EQ(values(reduce(kArgmax, x))[0], static_cast<double>(best));
  EXPECT_EQ(values(reduce(kAmax, eager::transpose(m, 0, 1)))[0], xv[best]);
}

TEST_F(ReduceTest, SameBitsForAnyThreadCount) {
  eager::manual_seed(11);
  Tensor x = eager::randn({1 << 20}, DType::kFloat32);
  Tensor tall = eager::reshape(x, {1 << 18, 4});
  int saved = parallel::num_threads();
  std::vector<std::vector<double>> got;
  for (int threads : {1, 2, 3}) {
    parallel::set_num_threads(threads);
    std::vector<double> r = values(reduce(kSum, x));
    std::vector<double> c = values(reduce(kSum, tall, {0}));
    r.insert(r.end(), c.begin(), c.end());
    got.push_back(r);
  }
  parallel::set_num_threads(saved);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[0], got[2]);
}

TEST_F(ReduceTest, IntegerAndHalfLayouts) {
  // int8 summed along each dim of a transposed view (int64 accumulation, no overflow).
  std::vector<double> v;
  for (int i = 0; i < 300 * 5; ++i) v.push_back((i * 37) % 255 - 127);
  Tensor x = eager::transpose(make<int8_t>(v, {300, 5}), 0, 1);  // [5, 300]
  std::vector<double> s1 = values(reduce(kSum, x, {1}));
  std::vector<double> s0 = values(reduce(kSum, x, {0}));
  for (int j = 0; j < 5; ++j) {
    double c = 0;
    for (int i = 0; i < 300; ++i) c += v[i * 5 + j];
    EXPECT_EQ(s1[j], c);
  }
  for (int i = 0; i < 300; i += 17) {
    double c = 0;
    for (int j = 0; j < 5; ++j) c += v[i * 5 + j];
    EXPECT_EQ(s0[i], c);
  }
  Tensor h = make<Half>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(values(reduce(kMean, h, {1})), (std::vector<double>{2, 5}));
  EXPECT_EQ(values(reduce(kAmax, h, {0})), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(values(reduce(kArgmin, h, {0})), (std::vector<double>{0, 0, 0}));
}

}  // namespace
}  // namespace rill
