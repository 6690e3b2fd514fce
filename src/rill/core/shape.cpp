#include "rill/core/shape.h"

#include <sstream>

#include "rill/util/error.h"

namespace rill {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    RILL_CHECK(!__builtin_mul_overflow(n, s, &n) && n <= (int64_t{1} << 56), Runtime, "[shape] ",
               shape_str(shape), " has too many elements to be stored");
  }
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

bool strides_are_contiguous(const Shape& shape, const Strides& strides) {
  for (int64_t s : shape)
    if (s == 0) return true;  // an empty tensor is contiguous whatever its strides
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RILL_CHECK(da == db || da == 1 || db == 1, Runtime, "[", op, "] shapes ", shape_str(a), " and ",
               shape_str(b), " cannot be broadcast: the size of tensor a (", da,
               ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
  RILL_CHECK(dim >= lo && dim <= hi, Index, "[", op, "] Dimension out of range (expected to be in range of [",
             lo, ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

void check_sizes(const Shape& shape, const char* op) {
  for (int64_t s : shape)
    RILL_CHECK(s >= 0, Runtime, "[", op, "] sizes must be non-negative, got ", shape_str(shape));
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

}  // namespace rill
