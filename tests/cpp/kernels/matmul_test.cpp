// matmul (ops/matmul.cpp, kernels/cpu/matmul.cpp, eager/matmul.cpp) against a
// naive reference: 2-D, batched with broadcast, 1-D cases, strided views, empty
// shapes, every numeric dtype, one and two threads, and the error messages.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/parallel.h"

namespace rill {
namespace {

using eager::matmul;

// Sets the intra-op thread count for one scope.
class Threads {
 public:
  explicit Threads(int n) : saved_(parallel::num_threads()) { parallel::set_num_threads(n); }
  ~Threads() { parallel::set_num_threads(saved_); }

 private:
  int saved_;
};

// A dense tensor filled with small values on a 1/4 grid (integers for integer
// dtypes), so every dtype represents them and float sums are exact.
Tensor make(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t = eager::empty(shape, dtype);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t r = static_cast<int64_t>((s >> 33) % 17) - 8;  // [-8, 8]
      if constexpr (kIsFloating<T>)
        p[i] = T(static_cast<OpMath<T>>(static_cast<double>(r) / 4.0));
      else if constexpr (std::is_unsigned_v<T>)
        p[i] = static_cast<T>(r + 8);
      else
        p[i] = static_cast<T>(r * 6);  // up to +-48: int8 sums overflow and wrap
    }
  });
  return t;
}

// Row-major values of a tensor of any strides.
struct Dense {
  Shape shape;
  std::vector<double> v;
};

Dense read(const Tensor& t) {
  eager::wait_readable(t);
  Dense d{t.shape(), std::vector<double>(static_cast<size_t>(t.numel()))};
  const Strides& st = t.strides();
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.data_ptr());
    std::vector<int64_t> idx(t.shape().size(), 0);
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * st[k];
      d.v[static_cast<size_t>(i)] = static_cast<double>(static_cast<OpMath<T>>(p[off]));
      for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < t.shape()[k]) break;
        idx[k] = 0;
      }
    }
  });
  return d;
}

// Sum rounded to dtype as the kernel stores it: floats round once, integers wrap.
double round_to(DType dtype, double sum, uint64_t wrapped) {
  return visit_dtype(dtype, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>)
      return static_cast<double>(static_cast<OpMath<T>>(T(static_cast<OpMath<T>>(sum))));
    else
      return static_cast<double>(static_cast<T>(wrapped));
  });
}

// torch.matmul on row-major values, written the slow obvious way.
Dense reference(const Tensor& ta, const Tensor& tb) {
  Dense a = read(ta), b = read(tb);
  const bool a1 = a.shape.size() == 1, b1 = b.shape.size() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  const size_t na = a.shape.size() - 2, nb = b.shape.size() - 2, nd = std::max(na, nb);
  const int64_t m = a.shape[na], k = a.shape[na + 1], n = b.shape[nb + 1];
  Shape batch(nd), ab(nd, 1), bb(nd, 1);
  for (size_t d = 0; d < nd; ++d) {
    if (d >= nd - na) ab[d] = a.shape[d - (nd - na)];
    if (d >= nd - nb) bb[d] = b.shape[d - (nd - nb)];
    batch[d] = std::max(ab[d], bb[d]);
    if (ab[d] == 0 || bb[d] == 0) batch[d] = 0;
  }
  Dense out;
  out.shape = batch;
  out.shape.push_back(m);
  out.shape.push_back(n);
  const int64_t count = shape_numel(batch);
  out.v.resize(static_cast<size_t>(count * m * n));
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t rest = bi, aoff = 0, boff = 0, astep = m * k, bstep = k * n;
    for (size_t d = nd; d-- > 0;) {
      int64_t i = rest % batch[d];
      rest /= batch[d];
      aoff += (ab[d] == 1 ? 0 : i) * astep;
      boff += (bb[d] == 1 ? 0 : i) * bstep;
      astep *= ab[d];
      bstep *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        uint64_t wrapped = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          double x = a.v[static_cast<size_t>(aoff + i * k + kk)],
                 y = b.v[static_cast<size_t>(boff + kk * n + j)];
          sum += x * y;
          wrapped += static_cast<uint64_t>(static_cast<int64_t>(x)) *
                     static_cast<uint64_t>(static_cast<int64_t>(y));
        }
        out.v[static_cast<size_t>((bi * m + i) * n + j)] = round_to(ta.dtype(), sum, wrapped);
      }
  }
  if (b1) out.shape.pop_back();
  if (a1) out.shape.erase(out.shape.end() - (b1 ? 1 : 2));
  return out;
}

// matmul(a, b) equals the reference exactly (values on the grid make every sum exact).
void expect_matches(const Tensor& a, const Tensor& b) {
  SCOPED_TRACE(a.meta()->str() + " @ " + b.meta()->str());
  Tensor c = matmul(a, b);
  Dense want = reference(a, b);
  ASSERT_EQ(c.shape(), want.shape);
  EXPECT_EQ(c.dtype(), a.dtype());
  EXPECT_TRUE(c.is_contiguous());
  Dense got = read(c);
  size_t bad = 0;
  for (size_t i = 0; i < want.v.size(); ++i)
    if (got.v[i] != want.v[i] && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": " << got.v[i] << " != " << want.v[i];
  EXPECT_EQ(bad, 0u);
}

// The message of the rill::Error that f throws ("" if none); its kind must be `kind`.
template <typename F>
std::string error_of(const F& f, ErrorKind kind = ErrorKind::kRuntime) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a rill::Error";
  return "";
}

const DType kAllNumeric[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                             DType::kBFloat16, DType::kUInt8,   DType::kInt8,
                             DType::kInt16,    DType::kInt32,   DType::kInt64};

TEST(Matmul, TwoDimAllDtypesOneAndTwoThreads) {
  const std::vector<std::vector<int64_t>> mkn = {
      {1, 1, 1}, {3, 4, 5}, {17, 33, 9}, {130, 200, 90}, {8, 600, 400}};
  for (int threads : {1, 2}) {
    Threads scope(threads);
    for (DType t : kAllNumeric) {
      uint64_t seed = 1;
      for (const auto& s : mkn) {
        Tensor a = make({s[0], s[1]}, t, seed++);
        expect_matches(a, make({s[1], s[2]}, t, seed++));
      }
    }
  }
}

TEST(Matmul, TransposedViewsUseAnyLayout) {
  Threads scope(2);
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32}) {
    Tensor at = eager::transpose(make({150, 120}, t, 1), 0, 1);  // [120, 150], strides [1, 120]
    Tensor bt = eager::transpose(make({90, 150}, t, 2), 0, 1);   // [150, 90], strides [1, 150]
    Tensor a = make({120, 150}, t, 3), b = make({150, 90}, t, 4);
    expect_matches(at, b);
    expect_matches(a, bt);
    expect_matches(at, bt);
  }
}

TEST(Matmul, StridedViewsArePacked) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt64}) {
    Tensor base = make({12, 20}, t, 5);
    Tensor a = eager::slice(base, 1, 0, std::nullopt, 2);  // [12, 10], strides [20, 2]
    Tensor b =
        eager::slice(make({20, 14}, t, 6), 0, 0, std::nullopt, 2);  // [10, 14], row stride 28
    expect_matches(a, b);
    // A row broadcast to a matrix (row stride 0) and a sliced batch dim.
    Tensor row = eager::expand(make({1, 10}, t, 7), {6, 10});
    expect_matches(row, b);
    Tensor batched =
        eager::slice(make({4, 10, 6}, t, 8), 2, 1, std::nullopt, 2);  // [4, 10, 3], col stride 2
    expect_matches(make({4, 5, 10}, t, 9), batched);
  }
}

TEST(Matmul, BroadcastBatches) {
  for (int threads : {1, 2}) {
    Threads scope(threads);
    for (DType t :
         {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32, DType::kInt8}) {
      Tensor c = matmul(make({2, 1, 3, 4}, t, 1), make({5, 4, 6}, t, 2));
      EXPECT_EQ(c.shape(), (Shape{2, 5, 3, 6}));
      expect_matches(make({2, 1, 3, 4}, t, 1), make({5, 4, 6}, t, 2));
      expect_matches(make({3, 4}, t, 3), make({2, 4, 5}, t, 4));  // 2-D @ batched
      expect_matches(make({2, 3, 4}, t, 5), make({4, 5}, t, 6));  // batches folded into rows
      expect_matches(make({6, 1, 4}, t, 7), make({4, 5}, t, 8));  // one row per batch, folded
      expect_matches(make({3, 80, 80}, t, 9),
                     make({3, 80, 80}, t, 10));  // few large batches: split rows
      expect_matches(make({16, 20, 30}, t, 11),
                     make({1, 30, 25}, t, 12));  // many batches: split batches
      // Batch dims expanded with stride 0 and a transposed batched operand.
      Tensor ea = eager::expand(make({1, 3, 4}, t, 13), {5, 3, 4});
      expect_matches(ea, make({5, 4, 2}, t, 14));
      expect_matches(make({5, 3, 4}, t, 15), eager::transpose(make({5, 2, 4}, t, 16), 1, 2));
      // A strided operand with a broadcast batch: packed once, not per batch.
      Tensor sb =
          eager::expand(eager::slice(make({1, 4, 10}, t, 17), 2, 0, std::nullopt, 3), {6, 4, 4});
      expect_matches(make({6, 3, 4}, t, 18), sb);
      Tensor sa =
          eager::expand(eager::slice(make({1, 3, 8}, t, 19), 2, 0, std::nullopt, 2), {6, 3, 4});
      expect_matches(sa, make({6, 4, 5}, t, 20));
      expect_matches(eager::slice(make({2, 1, 3, 8}, t, 21), 3, 0, std::nullopt, 2),
                     make({5, 4, 6}, t, 22));
      // One row per batch whose batch stride (8) is not its row stride (4): folded with row
      // stride 8.
      Tensor rows = eager::unsqueeze(eager::narrow(make({6, 8}, t, 23), 1, 0, 4), 1);  // [6, 1, 4]
      expect_matches(rows, make({4, 5}, t, 24));
    }
  }
}

TEST(Matmul, OneDimOperands) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt64}) {
    Tensor dot = matmul(make({7}, t, 1), make({7}, t, 2));
    EXPECT_EQ(dot.ndim(), 0);
    expect_matches(make({7}, t, 1), make({7}, t, 2));
    expect_matches(make({7}, t, 3), make({7, 5}, t, 4));      // -> [5]
    expect_matches(make({5, 7}, t, 5), make({7}, t, 6));      // -> [5]
    expect_matches(make({7}, t, 7), make({3, 7, 5}, t, 8));   // -> [3, 5]
    expect_matches(make({3, 5, 7}, t, 9), make({7}, t, 10));  // -> [3, 5]
    expect_matches(make({2, 1, 5, 7}, t, 11), make({7}, t, 12));
    EXPECT_EQ(matmul(make({7}, t, 3), make({7, 5}, t, 4)).shape(), (Shape{5}));
    EXPECT_EQ(matmul(make({3, 5, 7}, t, 9), make({7}, t, 10)).shape(), (Shape{3, 5}));
  }
}

TEST(Matmul, MatrixVectorProducts) {
  for (int threads : {1, 2}) {
    Threads scope(threads);
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
      Tensor at =
          eager::transpose(make({300, 2000}, t, 1), 0, 1);  // [2000, 300], transposed layout
      expect_matches(make({2000, 300}, t, 2), make({300}, t, 3));
      expect_matches(at, make({300}, t, 3));
      expect_matches(at,
                     eager::slice(make({300, 3}, t, 4), 1, 1, 2, 1));  // column with row stride 3
      expect_matches(make({300}, t, 5), make({300, 2000}, t, 6));
      expect_matches(make({300}, t, 5), eager::transpose(make({2000, 300}, t, 7), 0, 1));
      expect_matches(eager::slice(make({300, 2}, t, 8), 1, 0, 1, 1), make({1, 5}, t, 9));  // k == 1
      Tensor strided_row =
          eager::slice(make({3, 300}, t, 10), 0, 1, 2, 1);  // [1, 300], a row of a matrix
      expect_matches(eager::transpose(make({300, 1}, t, 11), 0, 1), make({300, 40}, t, 12));
      expect_matches(strided_row, eager::transpose(make({40, 300}, t, 13), 0, 1));
      Tensor gapped_row = eager::transpose(eager::slice(make({300, 3}, t, 14), 1, 2, 3, 1), 0,
                                           1);  // strides [1, 3]
      expect_matches(gapped_row, make({300, 40}, t, 15));
      expect_matches(gapped_row, eager::transpose(make({40, 300}, t, 16), 0, 1));
    }
  }
}

TEST(Matmul, EmptyShapes) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt32}) {
    Tensor z = matmul(make({3, 0}, t, 1), make({0, 4}, t, 2));  // k == 0: zeros
    EXPECT_EQ(z.shape(), (Shape{3, 4}));
    for (double v : read(z).v) EXPECT_EQ(v, 0.0);
    expect_matches(make({3, 0}, t, 1), make({0, 4}, t, 2));
    expect_matches(make({2, 3, 0}, t, 1), make({0, 4}, t, 2));
    expect_matches(make({0}, t, 3), make({0}, t, 4));  // empty dot: 0
    EXPECT_EQ(matmul(make({0, 3}, t, 5), make({3, 4}, t, 6)).shape(), (Shape{0, 4}));
    EXPECT_EQ(matmul(make({3, 4}, t, 5), make({4, 0}, t, 6)).shape(), (Shape{3, 0}));
    EXPECT_EQ(matmul(make({0, 2, 3}, t, 7), make({3, 4}, t, 8)).shape(), (Shape{0, 2, 4}));
    EXPECT_EQ(matmul(make({2, 1, 1, 3}, t, 7), make({0, 3, 4}, t, 8)).shape(), (Shape{2, 0, 1, 4}));
  }
}

TEST(Matmul, IntegerOverflowWraps) {
  // int8: 100 * 100 * 3 = 30000 wraps to 30000 mod 256 - 256 = 48.
  Tensor a = eager::full({1, 3}, Scalar(100), DType::kInt8);
  Tensor b = eager::full({3, 1}, Scalar(100), DType::kInt8);
  EXPECT_EQ(read(matmul(a, b)).v[0], 48.0);
  // int32: 2^20 * 2^20 * 2 = 2^41 wraps to 0; + 3 * 1 = 3.
  Tensor c = make({1, 3}, DType::kInt32, 1), d = make({3, 1}, DType::kInt32, 2);
  auto* pc = static_cast<int32_t*>(c.data_ptr());
  auto* pd = static_cast<int32_t*>(d.data_ptr());
  pc[0] = pc[1] = pd[0] = pd[1] = 1 << 20;
  pc[2] = 3;
  pd[2] = 1;
  EXPECT_EQ(read(matmul(c, d)).v[0], 3.0);
}

TEST(Matmul, ThreadCountDoesNotChangeFloatResults) {
  // Random-looking float32 values: splitting rows must not change any element.
  Tensor a = make({256, 256}, DType::kFloat32, 1), b = make({256, 256}, DType::kFloat32, 2);
  float* pa = static_cast<float*>(a.data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i)
    pa[i] = pa[i] * 0.37f + 0.001f * static_cast<float>(i % 97);
  Dense one, two;
  {
    Threads scope(1);
    one = read(matmul(a, b));
  }
  {
    Threads scope(2);
    two = read(matmul(a, b));
  }
  EXPECT_EQ(one.v, two.v);
}

TEST(Matmul, Errors) {
  Tensor s = make({}, DType::kFloat32, 1), m = make({2, 3}, DType::kFloat32, 2);
  EXPECT_THROW(matmul(s, m), Error);
  EXPECT_EQ(error_of([&] { matmul(s, m); }),
            "[matmul] both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  EXPECT_NE(error_of([&] { matmul(m, s); }).find("they are 2D and 0D"), std::string::npos);

  EXPECT_THROW(matmul(m, make({4, 5}, DType::kFloat32, 3)), Error);
  EXPECT_EQ(error_of([&] { matmul(m, make({4, 5}, DType::kFloat32, 3)); }),
            "[matmul] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_NE(error_of([&] {
              matmul(make({3}, DType::kFloat32, 4), make({4, 5}, DType::kFloat32, 5));
            }).find("(1x3 and 4x5)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              matmul(make({3}, DType::kFloat32, 4), make({4}, DType::kFloat32, 5));
            }).find("inconsistent tensor size"),
            std::string::npos);

  std::string dt = error_of([&] { matmul(m, make({3, 2}, DType::kFloat64, 6)); });
  EXPECT_EQ(
      dt.rfind("[matmul] expected m1 and m2 to have the same dtype, but got: float32 != float64",
               0),
      0u)
      << dt;

  Tensor bb = make({2, 2}, DType::kBool, 7);
  EXPECT_NE(error_of([&] { matmul(bb, bb); }, ErrorKind::kNotImplemented)
                .find("not implemented for 'Bool'"),
            std::string::npos);  // NotImplementedError in Python, as torch raises

  EXPECT_NE(error_of([&] {
              matmul(make({2, 2, 3}, DType::kFloat32, 8), make({3, 3, 4}, DType::kFloat32, 9));
            }).find("cannot be broadcast"),
            std::string::npos);
}

TEST(Matmul, OpRejectsOneDimOperandsDirectly) {
  const OpSchema& op = eager::op("matmul");
  Tensor in[2] = {make({3}, DType::kFloat32, 1), make({3, 2}, DType::kFloat32, 2)};
  EXPECT_THROW(eager::call1(op, in), Error);
}

}  // namespace
}  // namespace rill
