// CPU kernels of var and std and their overloads (ops/reduce.cpp). Two passes per output, in double
// (PyTorch's CPU accumulation type for float): the mean, then the sum of squared
// deviations, divided by max(N - correction, 0). Two passes avoid the cancellation
// of sum(x^2) - N mean^2 and need no division per element (Welford's does).
// Many outputs split over the intra-op pool; one output over a long dense run is
// split into fixed segments (Note [Reduction plans] in reduce.cpp: the segments
// depend on sizes only, so the result does not depend on the thread count).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/ops/reduce.h"

namespace rill::cpu {
namespace {

constexpr int64_t kSegment = 65536;  // elements of one parallel segment of a single long run

typedef double D8 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));

// Eight values of p as doubles.
template <typename T>
inline D8 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    F8 f;
    std::memcpy(&f, p, sizeof(F8));
    return __builtin_convertvector(f, D8);
  } else {
    D8 d;
    std::memcpy(&d, p, sizeof(D8));
    return d;
  }
}

inline double lanes_sum(D8 v) {
  double s = 0;
  for (int k = 0; k < 8; ++k) s += v[k];
  return s;
}

// sum of (x - mean)^2 over n elements at stride s (mean = 0: the plain sum when kSquare is false).
template <typename T, bool kSquare>
double row_reduce(const T* p, int64_t n, int64_t s, double mean) {
  if constexpr (std::is_same_v<T, float>) {
    // The same loop built for this CPU (isa_rows.h).
    if (s == 1) return row_kernels().moment_sum(p, n, mean, kSquare);
  }
  auto term = [mean](double v) { return kSquare ? (v - mean) * (v - mean) : v; };
  int64_t i = 0;
  double total = 0;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (s == 1 && n >= 32) {
      const D8 m = D8{} + mean;
      D8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
      for (; i + 32 <= n; i += 32) {
        D8 v0 = load8(p + i), v1 = load8(p + i + 8), v2 = load8(p + i + 16), v3 = load8(p + i + 24);
        if constexpr (kSquare) {
          v0 -= m, v1 -= m, v2 -= m, v3 -= m;
          a0 += v0 * v0, a1 += v1 * v1, a2 += v2 * v2, a3 += v3 * v3;
        } else {
          a0 += v0, a1 += v1, a2 += v2, a3 += v3;
        }
      }
      total = lanes_sum((a0 + a1) + (a2 + a3));
    }
  }
  for (; i < n; ++i) total += term(static_cast<double>(static_cast<OpMath<T>>(p[i * s])));
  return total;
}

struct Dim {
  int64_t size, stride;
};

// The reduced elements of one output: rows of `n` elements at stride `s`, one row per point of `outer`.
struct Reduction {
  std::vector<Dim> kept;   // outermost first, in the output's order
  std::vector<Dim> outer;  // reduced dims outside the row
  int64_t n = 1, s = 1, count = 1, outputs = 1, rows = 1;
};

Reduction plan(const TensorMeta& in, const std::vector<int64_t>& dims) {
  const int64_t nd = in.ndim();
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims)
    if (nd > 0) mask[d < 0 ? d + nd : d] = true;
  Reduction r;
  std::vector<Dim> red;
  for (int64_t d = 0; d < nd; ++d) {
    if (mask[d]) {
      r.count *= in.shape[d];
      if (in.shape[d] != 1) red.push_back({in.shape[d], in.strides[d]});
    } else {
      r.outputs *= in.shape[d];
      r.kept.push_back({in.shape[d], in.strides[d]});
    }
  }
  // The order of the reduced elements does not matter: sort by stride, merge dims that step as one.
  std::stable_sort(red.begin(), red.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  std::vector<Dim> merged;
  for (const Dim& d : red) {
    if (!merged.empty() && merged.back().stride == d.stride * d.size) {
      merged.back().size *= d.size;
      merged.back().stride = d.stride;
    } else {
      merged.push_back(d);
    }
  }
  if (!merged.empty()) {
    r.n = merged.back().size;
    r.s = merged.back().stride;
    merged.pop_back();
  }
  r.outer = std::move(merged);
  for (const Dim& d : r.outer) r.rows *= d.size;
  return r;
}

// Offset of point `index` of dims (row-major).
int64_t offset_of(const std::vector<Dim>& dims, int64_t index) {
  int64_t off = 0;
  for (size_t d = dims.size(); d-- > 0;) {
    off += (index % dims[d].size) * dims[d].stride;
    index /= dims[d].size;
  }
  return off;
}

template <typename T, bool kSquare>
double reduce_output(const T* base, const Reduction& r, double mean) {
  double total = 0;
  for (int64_t row = 0; row < r.rows; ++row)
    total += row_reduce<T, kSquare>(base + offset_of(r.outer, row), r.n, r.s, mean);
  return total;
}

// One long run (a single output with rows == 1): fixed segments in parallel, partials added in order.
template <typename T, bool kSquare>
double reduce_split(const T* p, const Reduction& r, double mean) {
  const int64_t segs = (r.n + kSegment - 1) / kSegment;
  std::vector<double> partial(static_cast<size_t>(segs));
  parallel::parallel_for(0, segs, 1, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      int64_t lo = g * kSegment, len = std::min(r.n, lo + kSegment) - lo;
      partial[g] = row_reduce<T, kSquare>(p + lo * r.s, len, r.s, mean);
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

template <bool kStd>
void moment_kernel(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  const MomentArgs args = moment_args(c.op, c.attrs);
  const Reduction r = plan(*in.meta, args.dims);
  const double divisor = std::max(static_cast<double>(r.count) - args.correction, 0.0);
  const double count = static_cast<double>(r.count);
  visit_floating_dtype(in.meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.ptr<const T>();
    T* y = c.outputs[0].ptr<T>();
    auto finish = [&](double ss) {
      double v = ss / divisor;
      return T(static_cast<OpMath<T>>(kStd ? std::sqrt(v) : v));
    };
    if (r.outputs == 0) return;
    if (r.outputs == 1 && r.rows == 1 && r.n >= 2 * kSegment) {
      double mean = reduce_split<T, false>(x, r, 0.0) / count;
      y[0] = finish(reduce_split<T, true>(x, r, mean));
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(r.count, 1));
    parallel::parallel_for(0, r.outputs, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* base = x + offset_of(r.kept, o);
        double mean = reduce_output<T, false>(base, r, 0.0) / count;
        y[o] = finish(reduce_output<T, true>(base, r, mean));
      }
    });
  });
}

}  // namespace

void register_moment_kernels() {
  for (const char* n : {"var", "var_dim", "var_unbiased"}) ops::set_cpu_kernel(n, moment_kernel<false>);
  for (const char* n : {"std", "std_dim", "std_unbiased"}) ops::set_cpu_kernel(n, moment_kernel<true>);
}

}  // namespace rill::cpu
