// CPU kernels of the creation family (ops/creation.cpp). Random numbers come
// from Philox-4x32-10, a counter-based generator: element i of a call with
// (seed, offset) uses counter offset + i, so the values do not depend on how
// the work is split across threads or when the instruction runs.
#include <cmath>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/philox.h"

namespace rill::cpu {
namespace {

void fill_kernel(const KernelContext& c) {
  visit_dtype(c.outputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = c.scalars[0].to<T>();
    map_elements<T>(c.outputs[0], {}, [v]() { return v; });
  });
}

void arange_kernel(const KernelContext& c) {
  const Scalar start = c.scalars[0], step = c.scalars[1];
  visit_dtype(c.outputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.outputs[0].ptr<T>();
    int64_t n = c.outputs[0].meta->numel;
    // An integer output steps in integers from the truncated start and step (arange(-0.9, 2.1, 2.0) is 0, 2 as
    // uint8), as PyTorch does.
    if (!kIsFloating<T> || (!start.is_floating() && !step.is_floating())) {
      int64_t s = start.to_int(), d = step.to_int();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<OpMath<T>>(s + i * d));
    } else {
      double s = start.to_double(), d = step.to_double();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<OpMath<T>>(s + static_cast<double>(i) * d));
    }
  });
}

template <typename T>
T below_one(double u) {
  OpMath<T> v = static_cast<OpMath<T>>(u);
  T t = static_cast<T>(v);
  // Rounding to a narrow type can reach 1.0: keep the documented half-open interval.
  if (static_cast<double>(static_cast<OpMath<T>>(t)) >= 1.0) t = static_cast<T>(OpMath<T>(0));
  return t;
}

template <typename Gen>
void random_kernel(const KernelContext& c, const Gen& gen) {
  Philox philox(static_cast<uint64_t>(c.scalars[0].to_int()));
  uint64_t offset = static_cast<uint64_t>(c.scalars[1].to_int());
  visit_dtype(c.outputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.outputs[0].ptr<T>();
    int64_t n = c.outputs[0].meta->numel;
    parallel::parallel_for(0, n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = gen.template operator()<T>(philox(offset + static_cast<uint64_t>(i)));
    });
  });
}

struct UniformGen {
  template <typename T> T operator()(const std::array<uint32_t, 4>& r) const {
    if constexpr (kIsFloating<T>) return below_one<T>(uniform01(r, 0));
    else return T();
  }
};

void rand_kernel(const KernelContext& c) { random_kernel(c, UniformGen{}); }

// Box-Muller on two uniforms.
struct NormalGen {
  template <typename T> T operator()(const std::array<uint32_t, 4>& r) const {
    if constexpr (kIsFloating<T>) {
      double u1 = 1.0 - uniform01(r, 0);  // (0, 1]: log is finite
      double u2 = uniform01(r, 2);
      double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      return static_cast<T>(static_cast<OpMath<T>>(z));
    } else {
      return T();
    }
  }
};

void randn_kernel(const KernelContext& c) { random_kernel(c, NormalGen{}); }

struct IntegerGen {
  int64_t low;
  uint64_t range;
  template <typename T> T operator()(const std::array<uint32_t, 4>& r) const {
    uint64_t bits = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    int64_t v = low + static_cast<int64_t>(bits % range);
    return static_cast<T>(static_cast<OpMath<T>>(v));
  }
};

void randint_kernel(const KernelContext& c) {
  int64_t low = c.scalars[2].to_int(), high = c.scalars[3].to_int();
  random_kernel(c, IntegerGen{low, static_cast<uint64_t>(high - low)});
}

}  // namespace

void register_creation_kernels() {
  ops::set_cpu_kernel("fill", fill_kernel);
  ops::set_cpu_kernel("arange", arange_kernel);
  ops::set_cpu_kernel("rand", rand_kernel);
  ops::set_cpu_kernel("randn", randn_kernel);
  ops::set_cpu_kernel("randint", randint_kernel);
}

}  // namespace rill::cpu
