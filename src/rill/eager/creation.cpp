// Creation functions and the default random generator.
#include <atomic>
#include <cmath>

#include "rill/eager/functional.h"
#include "rill/ops/type_promotion.h"

namespace rill::eager {
namespace {

// The default generator: a seed and a counter offset advanced at submission
// time, so results depend only on the order ops are issued in.
std::atomic<uint64_t> g_seed{67280421310721ULL};
std::atomic<uint64_t> g_offset{0};

Scalar seed_scalar() { return Scalar(static_cast<int64_t>(g_seed.load(std::memory_order_relaxed))); }
Scalar take_offset(int64_t numel) {
  return Scalar(static_cast<int64_t>(g_offset.fetch_add(static_cast<uint64_t>(numel), std::memory_order_relaxed)));
}

void check_device(Device d, const char* op) {
  RILL_CHECK(d.type == DeviceType::kCPU, Runtime, "[", op, "] rill was built without CUDA; use device='cpu'");
}

}  // namespace

void manual_seed(uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
  g_offset.store(0, std::memory_order_relaxed);
}

uint64_t initial_seed() { return g_seed.load(std::memory_order_relaxed); }

std::pair<Scalar, Scalar> take_random(int64_t numel) { return {seed_scalar(), take_offset(numel)}; }

Tensor empty(const Shape& shape, DType dtype, Device device) {
  check_device(device, "empty");
  check_sizes(shape, "empty");
  return Tensor::empty(make_contiguous_meta(shape, dtype, device));
}

Tensor full(const Shape& shape, Scalar value, DType dtype, Device device) {
  check_device(device, "full");
  Tensor out = empty(shape, dtype, device);
  write_fill(out, value);  // checks that value fits dtype: Note [Scalar range check]
  return out;
}

Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype, Device device) {
  check_device(device, "arange");
  static const OpSchema& ar = op("arange");
  double b = start.to_double(), e = end.to_double(), d = step.to_double();
  RILL_CHECK(d != 0.0, Runtime, "[arange] step must be nonzero");
  RILL_CHECK(std::isfinite(b) && std::isfinite(e), Runtime, "[arange] unsupported range: ", b, " -> ", e);
  RILL_CHECK((d > 0 && e >= b) || (d < 0 && e <= b), Runtime,
             "[arange] upper bound and lower bound inconsistent with step sign");
  DType t = dtype ? *dtype : (start.is_floating() || end.is_floating() || step.is_floating()) ? default_float()
                                                                                                : DType::kInt64;
  int64_t length;
  // An int64 range counts in the truncated bounds and step (arange(0., -8.000001, -4., dtype=int64) is 0, -4),
  // as PyTorch does; other dtypes count in doubles.
  if (t == DType::kInt64 || (!start.is_floating() && !end.is_floating() && !step.is_floating())) {
    int64_t bi = start.to_int(), ei = end.to_int(), di = step.to_int();
    RILL_CHECK(di != 0, Runtime, "[arange] step ", d, " is zero as an integer; use a step of at least 1");
    length = (di > 0 ? ei < bi : ei > bi) ? 0
             : di > 0 ? (ei - bi + di - 1) / di
                      : (bi - ei + (-di) - 1) / (-di);
  } else {
    double n = std::ceil((e - b) / d);
    RILL_CHECK(n < static_cast<double>(int64_t{1} << 56), Runtime, "[arange] the range [", b, ", ", e, ") with step ",
               d, " has too many elements");
    length = static_cast<int64_t>(n);
  }
  Scalar s[2] = {start, step};
  return call1(ar, {}, s, make_attrs({length, t}));
}

Tensor rand(const Shape& shape, DType dtype, Device device) {
  check_device(device, "rand");
  static const OpSchema& r = op("rand");
  check_sizes(shape, "rand");
  Scalar s[2] = {seed_scalar(), take_offset(shape_numel(shape))};
  return call1(r, {}, s, make_attrs({shape, dtype}));
}

Tensor randn(const Shape& shape, DType dtype, Device device) {
  check_device(device, "randn");
  static const OpSchema& r = op("randn");
  check_sizes(shape, "randn");
  Scalar s[2] = {seed_scalar(), take_offset(shape_numel(shape))};
  return call1(r, {}, s, make_attrs({shape, dtype}));
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device) {
  check_device(device, "randint");
  static const OpSchema& r = op("randint");
  RILL_CHECK(high > low, Runtime, "[randint] expected low < high, got low=", low, ", high=", high);
  check_sizes(shape, "randint");
  Scalar s[4] = {seed_scalar(), take_offset(shape_numel(shape)), Scalar(low), Scalar(high)};
  return call1(r, {}, s, make_attrs({shape, dtype}));
}

}  // namespace rill::eager
