// The counter-based random generator of the CPU kernels (creation.cpp, nn.cpp):
// Philox-4x32-10 and its conversion to uniform doubles. Element i of a call with
// (seed, offset) uses counter offset + i, so values do not depend on how the
// work is split across threads.
#pragma once

#include <array>
#include <cstdint>

namespace rill::cpu {

/** Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"). */
struct Philox {
  uint32_t key0, key1;
  explicit Philox(uint64_t seed) : key0(static_cast<uint32_t>(seed)), key1(static_cast<uint32_t>(seed >> 32)) {}
  std::array<uint32_t, 4> operator()(uint64_t counter) const {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = key0, k1 = key1;
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return {c0, c1, c2, c3};
  }
};

/** Uniform in [0, 1) from 53 random bits of r[first], r[first + 1]. */
inline double uniform01(const std::array<uint32_t, 4>& r, int first) {
  uint64_t bits = (static_cast<uint64_t>(r[first]) << 21) ^ (r[first + 1] >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

}  // namespace rill::cpu
