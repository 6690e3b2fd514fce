#include "rill/core/dtype.h"

#include <atomic>

namespace rill {

namespace {
std::atomic<DType> g_default_float{DType::kFloat32};
}  // namespace

DType default_float() { return g_default_float.load(std::memory_order_relaxed); }

void set_default_float(DType t) {
  RILL_CHECK(t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16, Type,
             "only floating-point types are supported as the default type, got ", dtype_name(t));
  g_default_float.store(t, std::memory_order_relaxed);
}

int64_t dtype_itemsize(DType t) {
  static constexpr int64_t kSizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return kSizes[static_cast<int>(t)];
}

std::string_view dtype_name(DType t) {
  static constexpr std::string_view kNames[kNumDTypes] = {
      "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"};
  return kNames[static_cast<int>(t)];
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Rows/columns in enum order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8 (PyTorch's table).
  using D = DType;
  constexpr D b1 = D::kBool, u1 = D::kUInt8, i1 = D::kInt8, i2 = D::kInt16, i4 = D::kInt32,
              i8 = D::kInt64, f2 = D::kFloat16, bf = D::kBFloat16, f4 = D::kFloat32,
              f8 = D::kFloat64;
  static constexpr D kTable[kNumDTypes][kNumDTypes] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return kTable[static_cast<int>(a)][static_cast<int>(b)];
}

}  // namespace rill
