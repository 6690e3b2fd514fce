// kernels/cpu: every build of the row loops this CPU can run gives the baseline build's results (Note [One
// build for every x86-64] in kernels/cpu/isa.cpp): bit for bit where the builds do the same float operations
// (arithmetic, rill's erf, float16 conversion, max), within a few ulp where they call different math
// libraries (libmvec's vector forms against libm) or sum in another order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "rill/kernels/cpu/erf.h"
#include "rill/kernels/cpu/isa_rows.h"

namespace rill::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/** The builds other than the baseline that this CPU runs (the test of each is skipped where there is none). */
std::vector<Isa> wider_builds() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

/** n values over [-12, 12), several binades near 0, and the special values, in an order with no pattern. */
std::vector<float> inputs(int64_t n) {
  std::vector<float> x(n);
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float u = static_cast<float>(s >> 8) / static_cast<float>(1u << 24);  // [0, 1)
    x[i] = (i % 3 == 0) ? std::ldexp(u - 0.5f, -static_cast<int>(i % 40)) : 24.0f * u - 12.0f;
  }
  const float special[] = {0.0f, -0.0f, kInf, -kInf, kNaN, 4.0f, -4.0f, 3.99999976f, 0.25f, 1e-40f, 88.5f, -104.0f};
  for (size_t k = 0; k < std::size(special) && static_cast<int64_t>(k) < n; ++k) x[(k * 37) % n] = special[k];
  return x;
}

/** Distance in units in the last place between two finite or infinite floats of the same sign region. */
int64_t ulps(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::abs(ordered(a) - ordered(b));
}

/** got equals want bit for bit, or both are NaN. */
bool same_bits(float got, float want) {
  return std::memcmp(&got, &want, 4) == 0 || (std::isnan(got) && std::isnan(want));
}

/** got is within max_ulps of want, or within atol of it (results near 0 after cancellation), or both NaN. */
bool close(float got, float want, int64_t max_ulps, float atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return ulps(got, want) <= max_ulps || std::fabs(got - want) <= atol;
}

constexpr int64_t kN = 1000 + 13;  // a tail after the widest vectors

TEST(Isa, ArithmeticMatchesBaselineBitForBit) {
  std::vector<float> a(kN), b(kN);
  for (int64_t i = 0; i < kN; ++i) {
    a[i] = 0.37f * static_cast<float>(i) - 91.0f;
    b[i] = 1.0f + 0.013f * static_cast<float>(i % 97);
  }
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: only the baseline build runs";
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    for (auto [mine, ref] : {std::pair<BinaryRow, BinaryRow>{k.add, base.add}, {k.sub, base.sub}, {k.mul, base.mul},
                             {k.div, base.div}}) {
      std::vector<float> got(kN), want(kN);
      mine(got.data(), a.data(), b.data(), kN);
      ref(want.data(), a.data(), b.data(), kN);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), kN * sizeof(float)), 0) << k.name << " differs from baseline";
    }
    // In place (out aliases a), as x += y runs.
    std::vector<float> x = a;
    k.add(x.data(), x.data(), b.data(), kN);
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(x[i], a[i] + b[i]) << k.name << " at " << i;
  }
}

TEST(Isa, UnaryMathMatchesBaselineWithinUlps) {
  const std::vector<float> x = inputs(kN);
  const char* names[] = {"exp", "log", "tanh", "log1p", "expm1", "sin", "cos", "erf"};
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    for (int f = 0; f < static_cast<int>(UnaryMath::kCount); ++f) {
      std::vector<float> got(kN), want(kN);
      k.unary[f](got.data(), x.data(), kN);
      base.unary[f](want.data(), x.data(), kN);
      // sin and cos of large arguments: libmvec's reduction is within 4 ulp too, but of a value near 0.
      for (int64_t i = 0; i < kN; ++i)
        ASSERT_TRUE(close(got[i], want[i], 4, 2e-7f))
            << k.name << " " << names[f] << "(" << x[i] << "): " << got[i] << ", baseline " << want[i];
    }
  }
}

TEST(Isa, RillErfMatchesScalarBitForBitInEveryBuild) {
  std::vector<float> x = inputs(kN);
  for (float v = -4.5f; v < 4.5f; v += 1.0f / 64) x.push_back(v);  // every interval and its edges
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Isa> isas = wider_builds();
  isas.push_back(Isa::kBaseline);
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    std::vector<float> got(n);
    k.erf_polynomial(got.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(same_bits(got[i], erf_float(x[i])))
          << k.name << " erf(" << x[i] << "): " << got[i] << ", scalar " << erf_float(x[i]);
  }
}

TEST(Isa, ActivationsMatchBaselineWithinUlps) {
  const std::vector<float> x = inputs(kN);
  std::vector<float> g(kN);
  for (int64_t i = 0; i < kN; ++i) g[i] = 0.5f + 0.001f * static_cast<float>(i % 101);
  using Row = std::function<void(const RowKernels&, float*)>;
  struct Case {
    std::string name;
    Row row;
    float atol = 4e-7f;
  };
  const std::vector<Case> rows = {
      {"gelu", [&](const RowKernels& k, float* y) { k.gelu(y, x.data(), kN, false); }},
      {"gelu tanh", [&](const RowKernels& k, float* y) { k.gelu(y, x.data(), kN, true); }},
      {"gelu_backward", [&](const RowKernels& k, float* y) { k.gelu_backward(y, g.data(), x.data(), kN, false); }},
      // 1 - tanh^2 near tanh = 1, times a factor near 3 x^3 kappa: 1 ulp of tanh is 1e-6 here.
      {"gelu_backward tanh",
       [&](const RowKernels& k, float* y) { k.gelu_backward(y, g.data(), x.data(), kN, true); }, 4e-6f},
      {"silu", [&](const RowKernels& k, float* y) { k.silu(y, x.data(), kN); }},
      {"silu_backward", [&](const RowKernels& k, float* y) { k.silu_backward(y, g.data(), x.data(), kN); }},
      {"softplus", [&](const RowKernels& k, float* y) { k.softplus(y, x.data(), kN, 1.0f, 20.0f); }},
      {"softplus beta 2", [&](const RowKernels& k, float* y) { k.softplus(y, x.data(), kN, 2.0f, 5.0f); }},
      {"softplus_backward",
       [&](const RowKernels& k, float* y) { k.softplus_backward(y, g.data(), x.data(), kN, 2.0f, 5.0f); }},
      {"elu", [&](const RowKernels& k, float* y) { k.elu(y, x.data(), kN, 1.3f); }},
  };
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    for (const auto& [name, row, atol] : rows) {
      std::vector<float> got(kN), want(kN);
      row(k, got.data());
      row(base, want.data());
      // A build with FMA may fuse a product into the next sum (gelu's polynomial), and libmvec's tanh and exp
      // differ from libm's by a few ulp, which 1 + tanh(x) near -1 turns into an absolute error near 1e-7.
      for (int64_t i = 0; i < kN; ++i)
        ASSERT_TRUE(close(got[i], want[i], 8, atol))
            << k.name << " " << name << "(" << x[i] << "): " << got[i] << ", baseline " << want[i];
    }
    // In place, as an activation of a temporary may run.
    std::vector<float> y = x, want(kN);
    k.gelu(y.data(), y.data(), kN, false);
    k.gelu(want.data(), x.data(), kN, false);
    EXPECT_EQ(std::memcmp(y.data(), want.data(), kN * sizeof(float)), 0) << k.name << " gelu in place";
  }
}

TEST(Isa, Float16ConversionMatchesBaselineBitForBit) {
  // Every float16, to float32 and back.
  std::vector<uint16_t> h(1 << 16);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  const int64_t n = static_cast<int64_t>(h.size());
  // float32 values at and between float16's: ties to even, the subnormals, overflow to infinity.
  std::vector<float> f = inputs(kN);
  for (float v = 0x1p-26f; v < 70000.0f; v *= 1.0009765625f) {  // 1 + 2^-10: hits every binade, and ties
    f.push_back(v);
    f.push_back(-v);
  }
  const int64_t m = static_cast<int64_t>(f.size());
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  std::vector<float> want_f(n);
  std::vector<uint16_t> want_h(m);
  base.float16_to_float(h.data(), want_f.data(), n);
  base.float_to_float16(f.data(), want_h.data(), m);
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    std::vector<float> got_f(n);
    k.float16_to_float(h.data(), got_f.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(same_bits(got_f[i], want_f[i])) << k.name << " float16 bits " << h[i] << ": " << got_f[i];
    std::vector<uint16_t> got_h(m);
    k.float_to_float16(f.data(), got_h.data(), m);
    for (int64_t i = 0; i < m; ++i) {
      // NaN payloads are the one difference between F16C and the portable rounding: compare NaN-ness there.
      const bool nan_got = (got_h[i] & 0x7fff) > 0x7c00, nan_want = (want_h[i] & 0x7fff) > 0x7c00;
      if (nan_got || nan_want) {
        ASSERT_TRUE(nan_got && nan_want) << k.name << " float16 of " << f[i];
        continue;
      }
      ASSERT_EQ(got_h[i], want_h[i]) << k.name << " float16 of " << f[i];
    }
  }
}

TEST(Isa, Bfloat16ConversionMatchesBaselineBitForBit) {
  std::vector<uint16_t> h(1 << 16);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  const int64_t n = static_cast<int64_t>(h.size());
  std::vector<float> f = inputs(kN);
  for (uint32_t bits = 0; bits < (1u << 20); ++bits) {  // every rounding case of 2^20 floats, NaNs included
    const uint32_t x = bits * 4099u + (bits << 12);
    float v;
    std::memcpy(&v, &x, 4);
    f.push_back(v);
  }
  const int64_t m = static_cast<int64_t>(f.size());
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  std::vector<float> want_f(n);
  std::vector<uint16_t> want_h(m);
  base.bfloat16_to_float(h.data(), want_f.data(), n);
  base.float_to_bfloat16(f.data(), want_h.data(), m);
  // The baseline against the definition: the top half, and rounding to nearest even that keeps NaN a NaN.
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, &want_f[i], 4);
    ASSERT_EQ(x, static_cast<uint32_t>(h[i]) << 16);
  }
  for (int64_t i = 0; i < m; ++i)
    if (std::isnan(f[i])) {
      ASSERT_GT(want_h[i] & 0x7fff, 0x7f80) << f[i];
    }
  // The arithmetic rows: float32 arithmetic on the values, rounded like float_to_bfloat16.
  std::vector<uint16_t> a(m), b(m);
  for (int64_t i = 0; i < m; ++i) {
    a[i] = want_h[i];
    b[i] = want_h[(i * 7 + 3) % m];
  }
  auto arith = [](const RowKernels& r) {
    return std::vector<Bfloat16Row>{r.bfloat16_add, r.bfloat16_sub, r.bfloat16_mul, r.bfloat16_div};
  };
  {
    std::vector<float> fa(m), fb(m), sum(m);
    std::vector<uint16_t> got(m), want(m);
    base.bfloat16_to_float(a.data(), fa.data(), m);
    base.bfloat16_to_float(b.data(), fb.data(), m);
    for (int64_t i = 0; i < m; ++i) sum[i] = fa[i] + fb[i];
    base.float_to_bfloat16(sum.data(), want.data(), m);
    base.bfloat16_add(got.data(), a.data(), b.data(), m);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), m * sizeof(uint16_t)), 0) << "baseline bfloat16_add";
  }
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  for (Isa isa : isas) {
    const RowKernels& k = row_kernels_for(isa);
    const std::vector<Bfloat16Row> mine = arith(k), ref = arith(base);
    for (size_t op = 0; op < mine.size(); ++op) {
      std::vector<uint16_t> got(m), want(m);
      mine[op](got.data(), a.data(), b.data(), m);
      ref[op](want.data(), a.data(), b.data(), m);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), m * sizeof(uint16_t)), 0) << k.name << " bfloat16 op " << op;
    }
    std::vector<float> got_f(n);
    k.bfloat16_to_float(h.data(), got_f.data(), n);
    EXPECT_EQ(std::memcmp(got_f.data(), want_f.data(), n * sizeof(float)), 0) << k.name;
    std::vector<uint16_t> got_h(m);
    k.float_to_bfloat16(f.data(), got_h.data(), m);
    for (int64_t i = 0; i < m; ++i) ASSERT_EQ(got_h[i], want_h[i]) << k.name << " bfloat16 of " << f[i];
  }
}

TEST(Isa, ReductionLoopsMatchBaselineBitForBit) {
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  // Lengths below one set of lanes, within one block, and over several levels of the cascade (block 256 and
  // 4 additions per level make the levels short).
  for (int64_t n : {5, 63, 64, 65, 200, 255, 1000, 4096, 70000}) {
    std::vector<float> x(n);
    std::vector<uint16_t> b(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = std::sin(0.37f * static_cast<float>(i)) * 100.0f + 0.001f * static_cast<float>(i);
      uint32_t bits;
      std::memcpy(&bits, &x[i], 4);
      b[i] = static_cast<uint16_t>(bits >> 16);
    }
    for (Isa isa : isas) {
      const RowKernels& k = row_kernels_for(isa);
      const std::string at = std::string(k.name) + " n=" + std::to_string(n);
      for (auto [block, cascade] : {std::pair<int64_t, int>{4096, 32}, {256, 4}})
        EXPECT_TRUE(same_bits(k.sum_cascade(x.data(), n, block, cascade), base.sum_cascade(x.data(), n, block, cascade)))
            << at << " block " << block;
      EXPECT_TRUE(same_bits(k.sum_bfloat16_lanes(b.data(), n), base.sum_bfloat16_lanes(b.data(), n))) << at;
      EXPECT_EQ(k.moment_sum(x.data(), n, 0.0, false), base.moment_sum(x.data(), n, 0.0, false)) << at;
      // The squares may be fused into the sum where the build has FMA: within a few ulp of the total.
      const double sq = base.moment_sum(x.data(), n, 1.5, true);
      EXPECT_NEAR(k.moment_sum(x.data(), n, 1.5, true), sq, 1e-14 * sq) << at;
    }
    // The cascade sum against a plain double sum: within its error bound.
    double exact = 0;
    for (float v : x) exact += v;
    double abs_sum = 0;
    for (float v : x) abs_sum += std::fabs(v);
    EXPECT_NEAR(base.sum_cascade(x.data(), n, 4096, 32), exact, 64 * 6e-8 * abs_sum) << n;
  }
}

TEST(Isa, RowReductionsMatchBaseline) {
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 1013}) {
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
      y[i] = std::cos(0.3f * static_cast<float>(i)) + 0.25f;
    }
    for (Isa isa : isas) {
      const RowKernels& k = row_kernels_for(isa);
      const std::string at = std::string(k.name) + " n=" + std::to_string(n);
      EXPECT_EQ(k.row_max(x.data(), n), base.row_max(x.data(), n)) << at;
      // Sums in another order: within a few ulp of the sum of absolute values.
      double abs_sum = 0, abs_dot = 0;
      for (int64_t i = 0; i < n; ++i) {
        abs_sum += std::fabs(x[i]);
        abs_dot += std::fabs(x[i] * y[i]);
      }
      const float eps = std::numeric_limits<float>::epsilon();
      EXPECT_NEAR(k.row_sum(x.data(), n), base.row_sum(x.data(), n), 4 * eps * abs_sum) << at;
      EXPECT_NEAR(k.row_dot(x.data(), y.data(), n), base.row_dot(x.data(), y.data(), n), 4 * eps * abs_dot) << at;
      const float mean = base.row_sum(x.data(), n) / static_cast<float>(n);
      const float sq = base.row_centered_squares(x.data(), mean, n);
      EXPECT_NEAR(k.row_centered_squares(x.data(), mean, n), sq, 8 * eps * sq) << at;
      const float mx = base.row_max(x.data(), n);
      std::vector<float> e_got(n, -1.0f), e_want(n);
      const float s_want = base.row_exp_sum(x.data(), mx, e_want.data(), n);
      EXPECT_NEAR(k.row_exp_sum(x.data(), mx, e_got.data(), n), s_want, 8 * eps * s_want) << at;
      EXPECT_NEAR(k.row_exp_sum(x.data(), mx, nullptr, n), s_want, 8 * eps * s_want) << at << " without out";
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(close(e_got[i], e_want[i], 4, 0.0f)) << at << " exp at " << i;
    }
  }
}

TEST(Isa, LayerNormRowsMatchBaseline) {
  std::vector<Isa> isas = wider_builds();
  if (isas.empty()) GTEST_SKIP() << "only the baseline build runs on this CPU";
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  for (int64_t n : {1, 7, 16, 17, 33, 256, 1013}) {
    std::vector<float> x(n), g(n), w(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
      g[i] = std::cos(0.3f * static_cast<float>(i)) + 0.25f;
      w[i] = 1.0f + 0.01f * static_cast<float>(i % 17);
      b[i] = 0.1f * static_cast<float>(i % 5);
    }
    const float mean = 0.3f, rstd = 0.7f;
    for (Isa isa : isas) {
      const RowKernels& k = row_kernels_for(isa);
      for (bool affine : {true, false}) {
        const std::string at = std::string(k.name) + " n=" + std::to_string(n) + (affine ? " affine" : "");
        const float* wp = affine ? w.data() : nullptr;
        std::vector<float> y_got(n), y_want(n);
        k.layer_norm(y_got.data(), x.data(), wp, affine ? b.data() : nullptr, mean, rstd, n);
        base.layer_norm(y_want.data(), x.data(), wp, affine ? b.data() : nullptr, mean, rstd, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(close(y_got[i], y_want[i], 4, 1e-6f)) << at << " y at " << i;
        // dw and db accumulate into what they hold: start both from the same values.
        std::vector<float> dx_got(n), dx_want(n), dw_got(n, 0.5f), dw_want(n, 0.5f), db_got(n, -1.0f), db_want(n, -1.0f);
        k.layer_norm_backward(dx_got.data(), dw_got.data(), db_got.data(), g.data(), x.data(), wp, mean, rstd, n);
        base.layer_norm_backward(dx_want.data(), dw_want.data(), db_want.data(), g.data(), x.data(), wp, mean, rstd,
                                 n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(close(dw_got[i], dw_want[i], 4, 1e-6f)) << at << " dw at " << i;
          ASSERT_TRUE(close(db_got[i], db_want[i], 0, 0.0f)) << at << " db at " << i;
          // dx subtracts the row's means (sums in another order): within the sums' rounding of their scale.
          ASSERT_NEAR(dx_got[i], dx_want[i], 1e-5f * static_cast<float>(n)) << at << " dx at " << i;
        }
      }
    }
  }
}

TEST(Isa, ChosenBuildIsOneThisCpuRuns) {
  std::string name = row_kernels().name;
  EXPECT_TRUE(name == "baseline" || (name == "avx2" && isa_supported(Isa::kAvx2)) ||
              (name == "avx512" && isa_supported(Isa::kAvx512)))
      << name;
}

}  // namespace
}  // namespace rill::cpu
