// CPU kernels of the reduction family (ops/reduce.cpp).
//
// Note [Reduction plans]
// A reduction sees its input as a list of dims, each with its size, its input
// stride and the stride of the matching output element (0 for reduced dims; the
// output is dense). Size-1 dims are dropped. For sum, mean, amax and amin the
// order of the reduced elements does not matter, so the dims are sorted by input
// stride (stride-0 dims, from expand, go outermost) and neighbours that step as
// one dim are merged: a transposed tensor reduces like a contiguous one. Then:
//   - the innermost dim is reduced ("inner" plan): each output reduces rows of
//     that dim; a dense row of float, double or int64 goes through four vector
//     accumulators held in registers (the lanes are independent, so nothing is
//     reassociated behind the compiler's back);
//   - the innermost dim is kept ("outer" plan): rows of that dim are added into
//     a vector of accumulators, out[j] += in[i, j], never walking a column.
// Few outputs with much work each are split into fixed segments whose partial
// results are combined pairwise; segments depend on sizes only, never on the
// thread count, so a sum gives the same bits with 1 thread or 16.
// Index reductions (argmax, max_dim, ...) need the logical order for "first
// occurrence", so their dims are merged but not sorted.
//
// Note [Cascade summation]
// Adding n floats one by one loses O(n) ulps. Each accumulator (a vector lane,
// or a column of the outer plan) takes at most kBlock / lanes elements or
// kCascade rows; then it is added into the next level and cleared, that level
// into the one above every kCascade additions, and so on. The error grows with
// log(n), as with PyTorch's cascade_sum. Other rows are summed pairwise over
// blocks of kBlock elements.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {
namespace {

constexpr int64_t kBlock = 4096;      // elements reduced by one set of accumulators before the next level
constexpr int64_t kSegment = 32768;   // elements of one parallel segment (a multiple of kBlock)
constexpr int64_t kMaxSegments = 64;  // segments per output, at most
constexpr int64_t kFewTasks = 8;      // below this many independent outputs, split the reduction itself
constexpr int64_t kColumns = 256;     // accumulators of one "outer" task
constexpr int kCascade = 32;          // additions a cascade level takes (Note [Cascade summation])
constexpr int kLevels = 6;            // cascade levels; the last one takes any number of rows

// Note [Dynamic chunks]
// Work is cut into ~8 chunks per thread, each a fixed range, and parallel_for hands
// them out a few at a time to whoever is running (Note [Waiting beside a parallel
// region] in util/parallel.cpp): a thread that wakes late takes fewer, and a
// client waiting on the result can take some. Which thread runs a chunk never
// changes what the chunk computes, so results do not depend on timing.

/** Run f(begin, end) over [0, n) in chunks of at least grain, handed out dynamically. */
template <typename F>
void parallel_chunks(int64_t n, int64_t grain, const F& f) {
  const int64_t threads = parallel::num_threads();
  grain = std::max<int64_t>(grain, 1);
  if (threads == 1 || n <= grain) {
    if (n > 0) f(0, n);
    return;
  }
  const int64_t chunk = std::max(grain, (n + 8 * threads - 1) / (8 * threads));
  const int64_t chunks = (n + chunk - 1) / chunk;
  parallel::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) f(c * chunk, std::min(n, (c + 1) * chunk));
  });
}

// --- reducers ----------------------------------------------------------------------------
// A reducer: Acc, identity(), load(T) -> Acc, combine(Acc, Acc) -> Acc, and for the
// vector loops combine_vec(V, V) -> V and step_vec(V& acc, M& nan, V values).

template <typename T>
using SumAcc = std::conditional_t<kIsFloating<T>, std::conditional_t<std::is_same_v<T, double>, double, float>,
                                  int64_t>;

template <typename T>
struct SumOp {
  using Acc = SumAcc<T>;
  static Acc identity() { return Acc(0); }
  static Acc load(T v) { return static_cast<Acc>(static_cast<OpMath<T>>(v)); }
  static Acc combine(Acc a, Acc b) { return a + b; }
  template <typename V>
  static V combine_vec(V a, V b) { return a + b; }
  /** One step of the vector loop: a += b (nan is for reducers that track NaN apart). */
  template <typename V, typename M>
  static void step_vec(V& a, M& /*nan*/, V b) { a = a + b; }
};

template <typename T>
struct ProdOp {
  using Acc = SumAcc<T>;
  static Acc identity() { return Acc(1); }
  static Acc load(T v) { return static_cast<Acc>(static_cast<OpMath<T>>(v)); }
  static Acc combine(Acc a, Acc b) { return a * b; }
  template <typename V>
  static V combine_vec(V a, V b) { return a * b; }
  template <typename V, typename M>
  static void step_vec(V& a, M& /*nan*/, V b) { a = a * b; }
};

template <typename T, bool kMax>
struct ExtremeOp {
  using Acc = OpMath<T>;
  static Acc identity() {
    if constexpr (std::is_same_v<Acc, bool>) return !kMax;
    else if constexpr (kIsFloating<T>) return kMax ? -std::numeric_limits<Acc>::infinity()
                                                   : std::numeric_limits<Acc>::infinity();
    else return kMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
  }
  static Acc load(T v) { return static_cast<Acc>(v); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_same_v<Acc, bool>) {
      return kMax ? (a || b) : (a && b);
    } else if constexpr (kIsFloating<T>) {
      // NaN in either wins: a NaN accumulator stays (b > NaN is false), a NaN b is taken.
      Acc m = (kMax ? b > a : b < a) ? b : a;
      return b != b ? b : m;
    } else {
      return (kMax ? a > b : a < b) ? a : b;
    }
  }
  template <typename V>
  static V combine_vec(V a, V b) {
    if constexpr (kIsFloating<T>) {
      V m = (kMax ? b > a : b < a) ? b : a;
      return (b != b) ? b : m;
    } else {
      return (kMax ? a > b : a < b) ? a : b;
    }
  }
  /** One step of the vector loop: a plain max / min (a single instruction), with NaNs
      only noted in nan; reduce_row_vec turns a noted NaN into the result. */
  template <typename V, typename M>
  static void step_vec(V& a, M& nan, V b) {
    if constexpr (kIsFloating<T>) {
      a = (kMax ? b > a : b < a) ? b : a;
      nan |= (b != b);
    } else {
      a = combine_vec(a, b);
    }
  }
};

// Lanes of reduce_block, the scalar-lane loop for the other types: four 64-byte vectors of Acc.
template <typename Acc>
inline constexpr int64_t kLanes = 256 / sizeof(Acc);

// 64-byte vectors (GCC/Clang vector extensions) for the dense loops whose input type is
// their accumulator type: with named vector accumulators the compiler keeps them in
// registers, which it does not reliably do for an array of scalar lanes.
template <typename Acc> struct VecOf { using type = void; };
template <> struct VecOf<float> { typedef float type __attribute__((vector_size(64))); };
template <> struct VecOf<double> { typedef double type __attribute__((vector_size(64))); };
template <> struct VecOf<int64_t> { typedef int64_t type __attribute__((vector_size(64))); };

template <typename T, typename Acc>
inline constexpr bool kHasVec = std::is_same_v<T, Acc> && !std::is_void_v<typename VecOf<Acc>::type>;

// Reduce n dense elements (kHasVec types only) with four vector accumulators per
// level, all in registers: level 0 takes one block (kBlock elements), then is added
// into level 1, which is added into level 2 every kCascade blocks, and so on
// (Note [Cascade summation]). Lanes are combined pairwise once, at the end.
template <typename T, typename Op>
T reduce_row_vec(const T* p, int64_t n) {
  using V = typename VecOf<T>::type;
  constexpr int64_t W = sizeof(V) / sizeof(T);
  auto load = [](const T* q) {
    V v;
    std::memcpy(&v, q, sizeof(V));
    return v;
  };
  if (n < 4 * W) {
    T a = Op::identity();
    for (int64_t i = 0; i < n; ++i) a = Op::combine(a, p[i]);
    return a;
  }
  V id;
  for (int64_t k = 0; k < W; ++k) id[k] = Op::identity();
  const int64_t body = n - n % (4 * W);
  int64_t i = 0;
  V r0 = id, r1 = id, r2 = id, r3 = id;
  decltype(id != id) nan = id != id;  // lanes that met a NaN (max / min only)
  if (body <= kBlock) {  // one block: no levels
    for (; i < body; i += 4 * W) {
      Op::step_vec(r0, nan, load(p + i));
      Op::step_vec(r1, nan, load(p + i + W));
      Op::step_vec(r2, nan, load(p + i + 2 * W));
      Op::step_vec(r3, nan, load(p + i + 3 * W));
    }
  } else {
    V b0 = id, b1 = id, b2 = id, b3 = id;  // level 1: sums of blocks
    V c0 = id, c1 = id, c2 = id, c3 = id;  // level 2: sums of kCascade level-1 sums
    V d0 = id, d1 = id, d2 = id, d3 = id;  // level 3: everything older
    int blocks = 0, groups = 0;
    while (i < body) {
      V a0 = id, a1 = id, a2 = id, a3 = id;
      const int64_t end = std::min(body, i + kBlock);
      for (; i < end; i += 4 * W) {
        Op::step_vec(a0, nan, load(p + i));
        Op::step_vec(a1, nan, load(p + i + W));
        Op::step_vec(a2, nan, load(p + i + 2 * W));
        Op::step_vec(a3, nan, load(p + i + 3 * W));
      }
      b0 = Op::combine_vec(b0, a0), b1 = Op::combine_vec(b1, a1);
      b2 = Op::combine_vec(b2, a2), b3 = Op::combine_vec(b3, a3);
      if (++blocks == kCascade) {
        c0 = Op::combine_vec(c0, b0), c1 = Op::combine_vec(c1, b1);
        c2 = Op::combine_vec(c2, b2), c3 = Op::combine_vec(c3, b3);
        b0 = b1 = b2 = b3 = id;
        blocks = 0;
        if (++groups == kCascade) {
          d0 = Op::combine_vec(d0, c0), d1 = Op::combine_vec(d1, c1);
          d2 = Op::combine_vec(d2, c2), d3 = Op::combine_vec(d3, c3);
          c0 = c1 = c2 = c3 = id;
          groups = 0;
        }
      }
    }
    r0 = Op::combine_vec(Op::combine_vec(d0, c0), b0), r1 = Op::combine_vec(Op::combine_vec(d1, c1), b1);
    r2 = Op::combine_vec(Op::combine_vec(d2, c2), b2), r3 = Op::combine_vec(Op::combine_vec(d3, c3), b3);
  }
  V r = Op::combine_vec(Op::combine_vec(r0, r1), Op::combine_vec(r2, r3));
  for (int64_t k = 0; k < W; ++k)
    if (nan[k]) return std::numeric_limits<T>::quiet_NaN();
  T lanes[W];
  std::memcpy(lanes, &r, sizeof(V));
  for (int64_t w = W / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) lanes[k] = Op::combine(lanes[k], lanes[k + w]);
  T tail = Op::identity();
  for (; i < n; ++i) tail = Op::combine(tail, p[i]);
  return Op::combine(lanes[0], tail);
}

// Reduce n <= kBlock elements p[0], p[s], ... (kUnit: s == 1).
template <typename T, typename Op, bool kUnit>
typename Op::Acc reduce_block(const T* p, int64_t n, int64_t s) {
  using Acc = typename Op::Acc;
  constexpr int64_t L = kLanes<Acc>;
  const int64_t step = kUnit ? 1 : s;
  if (n < L) {
    Acc a = Op::identity();
    for (int64_t i = 0; i < n; ++i) a = Op::combine(a, Op::load(p[i * step]));
    return a;
  }
  Acc acc[L];
  for (int64_t k = 0; k < L; ++k) acc[k] = Op::identity();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int64_t k = 0; k < L; ++k) acc[k] = Op::combine(acc[k], Op::load(p[(i + k) * step]));
  // The tail goes to its own accumulator: indexing acc with a run-time lane would keep
  // acc in memory instead of registers.
  Acc tail = Op::identity();
  for (; i < n; ++i) tail = Op::combine(tail, Op::load(p[i * step]));
  for (int64_t w = L / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) acc[k] = Op::combine(acc[k], acc[k + w]);
  return Op::combine(acc[0], tail);
}

// Reduce a row of n elements, pairwise over blocks.
template <typename T, typename Op, bool kUnit>
typename Op::Acc reduce_row(const T* p, int64_t n, int64_t s) {
  // The dense float32 and bfloat16 sums: the same loops, built for this CPU (isa_rows.h).
  if constexpr (kUnit && std::is_same_v<T, float> && std::is_same_v<Op, SumOp<float>>)
    return row_kernels().sum_cascade(p, n, kBlock, kCascade);
  if constexpr (kUnit && kHasVec<T, typename Op::Acc>) return reduce_row_vec<T, Op>(p, n);
  if constexpr (kUnit && std::is_same_v<T, BFloat16> && std::is_same_v<Op, SumOp<BFloat16>>) {
    static_assert(kLanes<typename Op::Acc> == 64, "sum_bfloat16_lanes has reduce_block's 64 lanes");
    if (n <= kBlock) return row_kernels().sum_bfloat16_lanes(&p->bits, n);
  }
  if (n <= kBlock) return reduce_block<T, Op, kUnit>(p, n, s);
  int64_t half = (n / kBlock + 1) / 2 * kBlock;
  return Op::combine(reduce_row<T, Op, kUnit>(p, half, s), reduce_row<T, Op, kUnit>(p + half * s, n - half, s));
}

template <typename T, typename Op>
typename Op::Acc reduce_row_any(const T* p, int64_t n, int64_t s) {
  return s == 1 ? reduce_row<T, Op, true>(p, n, 1) : reduce_row<T, Op, false>(p, n, s);
}

// Combine v[0..n) pairwise, in order.
template <typename Op>
typename Op::Acc combine_pairwise(const typename Op::Acc* v, int64_t n) {
  if (n == 0) return Op::identity();
  if (n == 1) return v[0];
  int64_t half = n / 2;
  return Op::combine(combine_pairwise<Op>(v, half), combine_pairwise<Op>(v + half, n - half));
}

// Accumulates rows of up to kColumns values (Note [Cascade summation]).
template <typename Op>
class Cascade {
 public:
  using Acc = typename Op::Acc;
  explicit Cascade(int64_t width) : width_(width) { clear(0); }
  /** Level 0: add the next row into it, then call row_done(). */
  Acc* row() { return level_[0]; }
  void row_done() {
    for (int l = 0; l + 1 < kLevels && ++count_[l] == kCascade; ++l) {
      if (l + 1 > top_) clear(++top_);
      for (int64_t j = 0; j < width_; ++j) level_[l + 1][j] = Op::combine(level_[l + 1][j], level_[l][j]);
      for (int64_t j = 0; j < width_; ++j) level_[l][j] = Op::identity();
      count_[l] = 0;
    }
  }
  /** Everything added so far, per column. */
  void result(Acc* out) const {
    for (int64_t j = 0; j < width_; ++j) {
      Acc a = level_[top_][j];
      for (int l = top_ - 1; l >= 0; --l) a = Op::combine(a, level_[l][j]);
      out[j] = a;
    }
  }

 private:
  void clear(int l) {
    for (int64_t j = 0; j < width_; ++j) level_[l][j] = Op::identity();
    count_[l] = 0;
  }
  int64_t width_;
  int top_ = 0;
  int count_[kLevels] = {};
  Acc level_[kLevels][kColumns];
};

// --- plans -------------------------------------------------------------------------------

struct Dim {
  int64_t size;
  int64_t in_stride;   // elements
  int64_t out_stride;  // elements; 0 for reduced dims
  bool reduced;
};

// Which input dims the op reduces, from its attrs (already validated by inference).
std::vector<bool> reduced_dims(const KernelContext& c) {
  int64_t nd = c.inputs[0].meta->ndim();
  std::vector<int64_t> dims;
  // The dim: an int (argmax, max_dim, prod_dim, ...), an int list, or None; any other first attr (prod's dtype)
  // is not a dim: every dim.
  const AttrValue& dim = c.attrs.values[0];
  if (const auto* d = std::get_if<int64_t>(&dim)) dims.push_back(*d);
  else if (const auto* ds = std::get_if<std::vector<int64_t>>(&dim)) dims = *ds;
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims)
    if (nd > 0) mask[d < 0 ? d + nd : d] = true;
  return mask;
}

// The plan's dims, outermost first (Note [Reduction plans]). sort: order by input stride.
std::vector<Dim> make_plan(const TensorMeta& in, const std::vector<bool>& mask, bool sort) {
  std::vector<Dim> dims;
  int64_t out_stride = 1;
  for (size_t d = in.shape.size(); d-- > 0;) {
    int64_t size = in.shape[d];
    bool red = mask[d];
    if (size != 1) dims.push_back({size, in.strides[d], red ? 0 : out_stride, red});
    if (!red) out_stride *= size;
  }
  std::reverse(dims.begin(), dims.end());
  if (sort) {
    auto key = [](const Dim& d) { return d.in_stride == 0 ? std::numeric_limits<int64_t>::max() : d.in_stride; };
    std::stable_sort(dims.begin(), dims.end(), [&](const Dim& a, const Dim& b) { return key(a) > key(b); });
  }
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& p = merged.back();
      if (p.reduced == d.reduced && p.in_stride == d.in_stride * d.size && p.out_stride == d.out_stride * d.size) {
        p.size *= d.size;
        p.in_stride = d.in_stride;
        p.out_stride = d.out_stride;
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

// Offsets (input and output, in elements) of the points of some dims, in row-major order.
class Counter {
 public:
  /** Starts at point start; dims must outlive the counter. */
  Counter(const std::vector<Dim>& dims, int64_t start) : dims_(dims), idx_(dims.size(), 0) { seek(start); }
  void seek(int64_t start) {
    in_ = out_ = 0;
    for (size_t d = dims_.size(); d-- > 0;) {
      idx_[d] = start % dims_[d].size;
      start /= dims_[d].size;
      in_ += idx_[d] * dims_[d].in_stride;
      out_ += idx_[d] * dims_[d].out_stride;
    }
  }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  void next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      in_ += dims_[d].in_stride;
      out_ += dims_[d].out_stride;
      if (++idx_[d] < dims_[d].size) return;
      in_ -= dims_[d].in_stride * dims_[d].size;
      out_ -= dims_[d].out_stride * dims_[d].size;
      idx_[d] = 0;
    }
  }

 private:
  const std::vector<Dim>& dims_;
  std::vector<int64_t> idx_;
  int64_t in_ = 0, out_ = 0;
};

int64_t count_of(const std::vector<Dim>& dims) {
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.size;
  return n;
}

// The plan split into the innermost dim and the kept / reduced dims outside it.
struct Split {
  Dim inner;
  std::vector<Dim> kept, reduced;
  int64_t outputs, rows;  // points of kept, of reduced
};

Split split_plan(std::vector<Dim> dims) {
  Split s;
  if (dims.empty()) dims.push_back({1, 0, 0, false});  // one element
  s.inner = dims.back();
  dims.pop_back();
  for (const Dim& d : dims) (d.reduced ? s.reduced : s.kept).push_back(d);
  s.outputs = count_of(s.kept);
  s.rows = count_of(s.reduced);
  return s;
}

// --- sum, mean, amax, amin -----------------------------------------------------------------

// Reduce in into out (dense) with Op; finish(Acc) gives each output value.
template <typename T, typename Out, typename Op, typename Finish>
void reduce_plain(const TensorArg& in, const TensorArg& out, const std::vector<bool>& mask, const Finish& finish) {
  using Acc = typename Op::Acc;
  const T* x = in.ptr<const T>();
  Out* y = out.ptr<Out>();
  if (out.meta->numel == 0) return;
  if (in.meta->numel == 0) {
    for (int64_t i = 0; i < out.meta->numel; ++i) y[i] = finish(Op::identity());
    return;
  }
  if (out.meta->numel == 1 && in.meta->contiguous && in.meta->numel < 2 * kSegment) {
    // A small dense input reduced to one value: the plan below would make it one row of one task
    // anyway, so skip building it (the per-op cost of `x.sum()` on small tensors).
    y[0] = finish(reduce_row_any<T, Op>(x, in.meta->numel, 1));
    return;
  }
  Split p = split_plan(make_plan(*in.meta, mask, /*sort=*/true));
  const int64_t n = p.inner.size, s = p.inner.in_stride;

  if (p.inner.reduced) {
    // Inner plan: each output reduces p.rows rows of n elements.
    const int64_t work = p.rows * n;
    if (p.outputs < kFewTasks && work >= 2 * kSegment) {
      // Few outputs: split each one into segments, of a row or of rows.
      const bool by_elements = p.rows == 1;
      const int64_t rows_per_seg =
          by_elements ? 1 : std::max((p.rows + kMaxSegments - 1) / kMaxSegments, std::max<int64_t>(1, kSegment / n));
      const int64_t seg_len = by_elements ? std::max((n / kMaxSegments + kBlock) / kBlock * kBlock, kSegment) : 0;
      const int64_t segs = by_elements ? (n + seg_len - 1) / seg_len : (p.rows + rows_per_seg - 1) / rows_per_seg;
      std::unique_ptr<Acc[]> partial(new Acc[p.outputs * segs]());  // not a vector: Acc may be bool
      parallel_chunks(p.outputs * segs, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t o = t / segs, g = t % segs;
          Counter oc(p.kept, o);
          const T* base = x + oc.in();
          if (by_elements) {
            int64_t lo = g * seg_len, len = std::min(n, lo + seg_len) - lo;
            partial[t] = reduce_row_any<T, Op>(base + lo * s, len, s);
          } else {
            int64_t lo = g * rows_per_seg, hi = std::min(p.rows, lo + rows_per_seg);
            Counter rc(p.reduced, lo);
            Cascade<Op> acc(1);
            for (int64_t r = lo; r < hi; ++r, rc.next()) {
              acc.row()[0] = Op::combine(acc.row()[0], reduce_row_any<T, Op>(base + rc.in(), n, s));
              acc.row_done();
            }
            acc.result(&partial[t]);
          }
        }
      });
      Counter oc(p.kept, 0);
      for (int64_t o = 0; o < p.outputs; ++o, oc.next())
        y[oc.out()] = finish(combine_pairwise<Op>(&partial[o * segs], segs));
      return;
    }
    parallel_chunks(p.outputs, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t b, int64_t e) {
      Counter oc(p.kept, b);
      Counter rc(p.reduced, 0);
      for (int64_t o = b; o < e; ++o, oc.next()) {
        const T* base = x + oc.in();
        Acc total;
        if (p.rows == 1) {
          total = reduce_row_any<T, Op>(base, n, s);
        } else {
          rc.seek(0);
          Cascade<Op> acc(1);
          for (int64_t r = 0; r < p.rows; ++r, rc.next()) {
            acc.row()[0] = Op::combine(acc.row()[0], reduce_row_any<T, Op>(base + rc.in(), n, s));
            acc.row_done();
          }
          acc.result(&total);
        }
        y[oc.out()] = finish(total);
      }
    });
    return;
  }

  // Outer plan: the innermost dim is kept; tasks are (outer output, column chunk).
  // Narrow rows stored back to back (a tall, thin input) are read `group` rows at a
  // time as one wide row, so each step still adds a long vector; the wide
  // accumulators are folded back to n columns at the end.
  const int64_t chunks = (n + kColumns - 1) / kColumns;
  const int64_t tasks = p.outputs * chunks;
  const int64_t t_out = p.inner.out_stride;
  const bool fold = s == 1 && 2 * n <= kColumns && p.reduced.size() == 1 && p.reduced[0].in_stride == n;
  const int64_t group = fold ? kColumns / n : 1;
  const int64_t units = p.rows / group;  // (wide) rows to add
  const int64_t task_work = p.rows * std::min(n, kColumns);
  // Reduces units [lo, hi) of task t into result (its columns, from column c0).
  auto accumulate = [&](int64_t t, int64_t lo, int64_t hi, Acc* result) {
    int64_t o = t / chunks, c0 = (t % chunks) * kColumns, w = std::min(kColumns, n - c0);
    Counter oc(p.kept, o);
    const T* base = x + oc.in() + c0 * s;
    Cascade<Op> acc(w * group);
    auto add = [&](const T* row, int64_t len) {
      Acc* a = acc.row();
      if (s == 1) {
        for (int64_t j = 0; j < len; ++j) a[j] = Op::combine(a[j], Op::load(row[j]));
      } else {
        for (int64_t j = 0; j < len; ++j) a[j] = Op::combine(a[j], Op::load(row[j * s]));
      }
      acc.row_done();
    };
    if (!fold) {
      Counter rc(p.reduced, lo);
      for (int64_t r = lo; r < hi; ++r, rc.next()) add(base + rc.in(), w);
      acc.result(result);
      return;
    }
    for (int64_t r = lo; r < hi; ++r) add(base + r * group * n, group * n);
    if (hi == units)  // the rows that do not fill a wide row
      for (int64_t r = units * group; r < p.rows; ++r) add(base + r * n, n);
    Acc wide[kColumns], column[kColumns];
    acc.result(wide);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t g = 0; g < group; ++g) column[g] = wide[g * n + j];
      result[j] = combine_pairwise<Op>(column, group);
    }
  };
  auto store = [&](int64_t t, const Acc* values) {
    int64_t o = t / chunks, c0 = (t % chunks) * kColumns, w = std::min(kColumns, n - c0);
    Counter oc(p.kept, o);
    Out* dst = y + oc.out() + c0 * t_out;
    for (int64_t j = 0; j < w; ++j) dst[j * t_out] = finish(values[j]);
  };
  if (tasks < kFewTasks && task_work >= 2 * kSegment) {
    // Few tasks: split the rows into segments, then combine their partial columns.
    const int64_t per_unit = task_work / std::max<int64_t>(units, 1);
    const int64_t units_per_seg = std::max((units + kMaxSegments - 1) / kMaxSegments, kSegment / per_unit);
    const int64_t segs = (units + units_per_seg - 1) / units_per_seg;
    std::unique_ptr<Acc[]> partial(new Acc[tasks * segs * kColumns]());
    parallel_chunks(tasks * segs, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t t = i / segs, g = i % segs;
        accumulate(t, g * units_per_seg, std::min(units, (g + 1) * units_per_seg), &partial[i * kColumns]);
      }
    });
    std::unique_ptr<Acc[]> column(new Acc[segs]()), values(new Acc[kColumns]());
    for (int64_t t = 0; t < tasks; ++t) {
      for (int64_t j = 0; j < std::min(n, kColumns); ++j) {
        for (int64_t g = 0; g < segs; ++g) column[g] = partial[(t * segs + g) * kColumns + j];
        values[j] = combine_pairwise<Op>(column.get(), segs);
      }
      store(t, values.get());
    }
    return;
  }
  parallel_chunks(tasks, std::max<int64_t>(1, kParallelGrain / task_work), [&](int64_t b, int64_t e) {
    Acc values[kColumns];
    for (int64_t t = b; t < e; ++t) {
      accumulate(t, 0, units, values);
      store(t, values);
    }
  });
}

// Number of input elements reduced into each output.
int64_t reduced_count(const TensorMeta& in, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) n *= in.shape[d];
  return n;
}

// sum and prod: floats reduce in their own dtype; bool and integers in int64 unless a dtype was given.
template <template <typename> class Op>
void sum_or_prod_kernel(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  const TensorArg& out = c.outputs[0];
  std::vector<bool> mask = reduced_dims(c);
  visit_dtype(in.meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = SumAcc<T>;
    if constexpr (kIsFloating<T>) {
      reduce_plain<T, T, Op<T>>(in, out, mask, [](Acc a) { return T(a); });
    } else if (out.meta->dtype == DType::kInt64) {
      reduce_plain<T, int64_t, Op<T>>(in, out, mask, [](Acc a) { return a; });
    } else {
      RILL_ASSERT(out.meta->dtype == in.meta->dtype, "[", c.op.name, "] unexpected output dtype");
      reduce_plain<T, T, Op<T>>(in, out, mask, [](Acc a) { return static_cast<T>(a); });  // wraps like torch
    }
  });
}

void sum_kernel(const KernelContext& c) { sum_or_prod_kernel<SumOp>(c); }

void mean_kernel(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  std::vector<bool> mask = reduced_dims(c);
  const int64_t count = reduced_count(*in.meta, mask);
  visit_floating_dtype(in.meta->dtype, "mean", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = SumAcc<T>;
    const Acc n = static_cast<Acc>(count);
    // torch on CPU: sum (in float for 16-bit floats), then divide, then round once.
    reduce_plain<T, T, SumOp<T>>(in, c.outputs[0], mask, [n](Acc a) { return T(a / n); });
  });
}

void prod_kernel(const KernelContext& c) { sum_or_prod_kernel<ProdOp>(c); }

// any, all: the input arrives as bool; the output is bool, or uint8 for a uint8 input.
template <bool kAny>
void any_all_kernel(const KernelContext& c) {
  std::vector<bool> mask = reduced_dims(c);
  using Op = ExtremeOp<bool, kAny>;
  if (c.outputs[0].meta->dtype == DType::kUInt8)
    reduce_plain<bool, uint8_t, Op>(c.inputs[0], c.outputs[0], mask, [](bool a) { return uint8_t(a); });
  else
    reduce_plain<bool, bool, Op>(c.inputs[0], c.outputs[0], mask, [](bool a) { return a; });
}

template <bool kMax>
void extreme_kernel(const KernelContext& c) {
  std::vector<bool> mask = reduced_dims(c);
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Op = ExtremeOp<T, kMax>;
    reduce_plain<T, T, Op>(c.inputs[0], c.outputs[0], mask, [](typename Op::Acc a) { return T(a); });
  });
}

// --- argmax, argmin, max_dim, min_dim --------------------------------------------------------

// True when v should replace best: strictly better, or the first NaN (NaN beats any number).
template <bool kMax, typename M>
inline bool better(M v, M best) {
  if constexpr (std::is_floating_point_v<M>) {
    if (v != v) return best == best;
  }
  return kMax ? v > best : v < best;
}

// Best value and its index (within the reduced elements, in logical row-major order).
template <typename M>
struct Best {
  M value;
  int64_t index;
};

template <typename T, bool kMax>
Best<OpMath<T>> best_of_row(const T* p, int64_t n, int64_t s, int64_t first_index) {
  using M = OpMath<T>;
  Best<M> b{static_cast<M>(p[0]), first_index};
  for (int64_t i = 1; i < n; ++i) {
    M v = static_cast<M>(p[i * s]);
    if (better<kMax>(v, b.value)) b = {v, first_index + i};
  }
  return b;
}

// values (may be null) and indices of the best element of each output.
template <typename T, bool kMax>
void reduce_index(const TensorArg& in, const TensorArg* values, const TensorArg& indices,
                  const std::vector<bool>& mask) {
  using M = OpMath<T>;
  if (indices.meta->numel == 0) return;
  const T* x = in.ptr<const T>();
  T* yv = values ? values->ptr<T>() : nullptr;
  int64_t* yi = indices.ptr<int64_t>();
  Split p = split_plan(make_plan(*in.meta, mask, /*sort=*/false));
  const int64_t n = p.inner.size, s = p.inner.in_stride;

  if (p.inner.reduced) {
    // Each output scans its rows in order; the index is row * n + position.
    auto scan = [&](const T* base, Counter& rc) {
      rc.seek(0);
      Best<M> b = best_of_row<T, kMax>(base + rc.in(), n, s, 0);
      rc.next();
      for (int64_t r = 1; r < p.rows; ++r, rc.next()) {
        Best<M> rb = best_of_row<T, kMax>(base + rc.in(), n, s, r * n);
        if (better<kMax>(rb.value, b.value)) b = rb;
      }
      return b;
    };
    auto put = [&](int64_t o_out, Best<M> b) {
      if (yv) yv[o_out] = T(b.value);
      yi[o_out] = b.index;
    };
    const int64_t work = p.rows * n;
    if (p.outputs == 1 && p.rows == 1 && n >= 2 * kSegment) {
      // One long row: best of each segment, then the first best across segments.
      const int64_t segs = std::min(kMaxSegments, (n + kSegment - 1) / kSegment);
      const int64_t seg_len = (n + segs - 1) / segs;
      std::vector<Best<M>> partial(static_cast<size_t>(segs));
      parallel_chunks(segs, 1, [&](int64_t b, int64_t e) {
        for (int64_t g = b; g < e; ++g) {
          int64_t lo = g * seg_len, len = std::min(n, lo + seg_len) - lo;
          partial[g] = best_of_row<T, kMax>(x + lo * s, len, s, lo);
        }
      });
      Best<M> b = partial[0];
      for (int64_t g = 1; g < segs; ++g)
        if (better<kMax>(partial[g].value, b.value)) b = partial[g];
      put(0, b);
      return;
    }
    parallel_chunks(p.outputs, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t b, int64_t e) {
      Counter oc(p.kept, b);
      Counter rc(p.reduced, 0);
      for (int64_t o = b; o < e; ++o, oc.next()) put(oc.out(), scan(x + oc.in(), rc));
    });
    return;
  }

  // The innermost dim is kept: compare whole rows, column by column.
  const int64_t chunks = (n + kColumns - 1) / kColumns;
  const int64_t t_out = p.inner.out_stride;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (p.rows * std::min(n, kColumns)));
  parallel_chunks(p.outputs * chunks, grain, [&](int64_t b, int64_t e) {
    M best[kColumns];
    int64_t index[kColumns];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / chunks, c0 = (t % chunks) * kColumns, w = std::min(kColumns, n - c0);
      Counter oc(p.kept, o);
      Counter rc(p.reduced, 0);
      for (int64_t r = 0; r < p.rows; ++r, rc.next()) {
        const T* row = x + oc.in() + rc.in() + c0 * s;
        if (r == 0) {
          for (int64_t j = 0; j < w; ++j) best[j] = static_cast<M>(row[j * s]), index[j] = 0;
          continue;
        }
        for (int64_t j = 0; j < w; ++j) {
          M v = static_cast<M>(row[j * s]);
          bool take = better<kMax>(v, best[j]);
          best[j] = take ? v : best[j];
          index[j] = take ? r : index[j];
        }
      }
      int64_t dst = oc.out() + c0 * t_out;
      for (int64_t j = 0; j < w; ++j) {
        if (yv) yv[dst + j * t_out] = T(best[j]);
        yi[dst + j * t_out] = index[j];
      }
    }
  });
}

template <bool kMax>
void arg_kernel(const KernelContext& c) {
  std::vector<bool> mask = reduced_dims(c);
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_index<T, kMax>(c.inputs[0], nullptr, c.outputs[0], mask);
  });
}

template <bool kMax>
void extreme_dim_kernel(const KernelContext& c) {
  std::vector<bool> mask = reduced_dims(c);
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_index<T, kMax>(c.inputs[0], &c.outputs[0], c.outputs[1], mask);
  });
}

}  // namespace

void register_reduce_kernels() {
  ops::set_cpu_kernel("sum", sum_kernel);
  ops::set_cpu_kernel("mean", mean_kernel);
  ops::set_cpu_kernel("prod", prod_kernel);
  ops::set_cpu_kernel("prod_dim", prod_kernel);
  ops::set_cpu_kernel("any", any_all_kernel<true>);
  ops::set_cpu_kernel("all", any_all_kernel<false>);
  register_scan_kernels();
  register_moment_kernels();
  ops::set_cpu_kernel("amax", extreme_kernel<true>);
  ops::set_cpu_kernel("amin", extreme_kernel<false>);
  ops::set_cpu_kernel("max", extreme_kernel<true>);
  ops::set_cpu_kernel("min", extreme_kernel<false>);
  ops::set_cpu_kernel("argmax", arg_kernel<true>);
  ops::set_cpu_kernel("argmin", arg_kernel<false>);
  ops::set_cpu_kernel("max_dim", extreme_dim_kernel<true>);
  ops::set_cpu_kernel("min_dim", extreme_dim_kernel<false>);
}

}  // namespace rill::cpu
