// kernels/cpu: every build of the row loops this CPU can run gives the same results (Note [One build for
// every x86-64] in kernels/cpu/isa.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "rill/kernels/cpu/isa_rows.h"

namespace rill::cpu {
namespace {

TEST(Isa, EveryBuildThisCpuRunsGivesTheBaselineResults) {
  constexpr int64_t n = 1000 + 13;  // a tail after the widest vectors
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.37f * static_cast<float>(i) - 91.0f;
    b[i] = 1.0f + 0.013f * static_cast<float>(i % 97);
  }
  const RowKernels& base = row_kernels_for(Isa::kBaseline);
  int ran = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    ++ran;
    const RowKernels& k = row_kernels_for(isa);
    using Row = void (*)(float*, const float*, const float*, int64_t);
    for (auto [mine, ref] : {std::pair<Row, Row>{k.add, base.add}, {k.sub, base.sub}, {k.mul, base.mul},
                             {k.div, base.div}}) {
      std::vector<float> got(n), want(n);
      mine(got.data(), a.data(), b.data(), n);
      ref(want.data(), a.data(), b.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << k.name << " differs from baseline";
    }
    // In place (out aliases a), as x += y runs.
    std::vector<float> x = a;
    k.add(x.data(), x.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[i], a[i] + b[i]) << k.name << " at " << i;
  }
  if (ran == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: only the baseline build runs";
}

TEST(Isa, ChosenBuildIsOneThisCpuRuns) {
  std::string name = row_kernels().name;
  EXPECT_TRUE(name == "baseline" || (name == "avx2" && isa_supported(Isa::kAvx2)) ||
              (name == "avx512" && isa_supported(Isa::kAvx512)))
      << name;
}

}  // namespace
}  // namespace rill::cpu
