// rill's float32 erf (kernels/cpu/erf.h, Note [Vectorised erf]) against double
// erf on a sample of every float binade (its vector forms: kernels/isa_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "rill/kernels/cpu/erf.h"

namespace rill::cpu {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// |got - erf(x)| in units of the float ulp at erf(x).
double ulp_error(float got, float x) {
  const double exact = std::erf(static_cast<double>(x));
  const float rounded = static_cast<float>(exact);
  const float mag = std::fabs(rounded) == 0.0f ? std::numeric_limits<float>::denorm_min() : std::fabs(rounded);
  return std::fabs(static_cast<double>(got) - exact) / (std::nextafter(mag, INFINITY) - mag);
}

// Every 1009th float from 0 to past 4 (where erf is 1), positive and negative.
std::vector<float> sample() {
  std::vector<float> xs;
  for (uint32_t b = 0; b < 0x40A00000u; b += 1009) {
    xs.push_back(from_bits(b));
    xs.push_back(-from_bits(b));
  }
  for (float x : {0.25f, 0.5f, 1.0f, 3.75f, 3.99999976f, 4.0f, 1e30f}) {
    xs.push_back(x);
    xs.push_back(-x);
  }
  return xs;
}

TEST(Erf, ScalarWithinOneUlpAndOdd) {
  double worst = 0;
  for (float x : sample()) {
    const float y = erf_float(x);
    worst = std::max(worst, ulp_error(y, x));
    ASSERT_EQ(erf_float(-x), -y) << x;
  }
  EXPECT_LE(worst, 1.05);  // the exhaustive maximum (Note [Vectorised erf])
}

TEST(Erf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(erf_float(inf), 1.0f);
  EXPECT_EQ(erf_float(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(erf_float(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::signbit(erf_float(-0.0f)) && erf_float(-0.0f) == 0.0f);
  const float tiny = std::numeric_limits<float>::denorm_min() * 1000;
  EXPECT_EQ(erf_float(tiny), static_cast<float>(std::erf(static_cast<double>(tiny))));
}


}  // namespace
}  // namespace rill::cpu
