// Element types, their C++ types, and PyTorch's promotion lattice.
#pragma once

#include <complex>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "rill/core/half.h"
#include "rill/util/error.h"

namespace rill {

/** The element types rill supports (docs/architecture.md §4). */
enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

/** Number of dtypes. */
inline constexpr int kNumDTypes = 10;

/** Bytes per element. */
int64_t dtype_itemsize(DType t);
/** Short name, e.g. "float32". */
std::string_view dtype_name(DType t);

/** The default floating dtype (float32 unless rill.set_default_dtype changed it): what Python floats, factory
    functions without a dtype and integer inputs of float-valued ops become. Process-wide, as in PyTorch. */
DType default_float();
/** Set the default floating dtype (a floating dtype; raises otherwise). */
void set_default_float(DType t);
/** True for float16, bfloat16, float32, float64. */
inline bool dtype_is_floating(DType t) { return t >= DType::kFloat16; }
/** True for the integer types (not bool). */
inline bool dtype_is_integral(DType t) { return t >= DType::kUInt8 && t <= DType::kInt64; }
/** True for signed types (floats and signed ints). */
inline bool dtype_is_signed(DType t) { return t != DType::kBool && t != DType::kUInt8; }
/** True when a result of dtype from may be stored in to without losing its kind (PyTorch's canCast:
 * no float -> integer, no non-bool -> bool). */
inline bool dtype_can_cast(DType from, DType to) {
  if (dtype_is_floating(from) && !dtype_is_floating(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}
/** Promotion of two dtypes, PyTorch's table (e.g. uint8 + int8 -> int16, float16 + bfloat16 -> float32). */
DType promote_types(DType a, DType b);

/** Tag carrying a C++ element type through generic lambdas. */
template <typename T>
struct TypeTag {
  using type = T;
};

/** C++ type of each dtype. */
template <DType D> struct CppType;
template <> struct CppType<DType::kBool> { using type = bool; };
template <> struct CppType<DType::kUInt8> { using type = uint8_t; };
template <> struct CppType<DType::kInt8> { using type = int8_t; };
template <> struct CppType<DType::kInt16> { using type = int16_t; };
template <> struct CppType<DType::kInt32> { using type = int32_t; };
template <> struct CppType<DType::kInt64> { using type = int64_t; };
template <> struct CppType<DType::kFloat16> { using type = Half; };
template <> struct CppType<DType::kBFloat16> { using type = BFloat16; };
template <> struct CppType<DType::kFloat32> { using type = float; };
template <> struct CppType<DType::kFloat64> { using type = double; };

/** dtype of a C++ element type. */
template <typename T> inline constexpr DType kDTypeOf = DType::kBool;
template <> inline constexpr DType kDTypeOf<uint8_t> = DType::kUInt8;
template <> inline constexpr DType kDTypeOf<int8_t> = DType::kInt8;
template <> inline constexpr DType kDTypeOf<int16_t> = DType::kInt16;
template <> inline constexpr DType kDTypeOf<int32_t> = DType::kInt32;
template <> inline constexpr DType kDTypeOf<int64_t> = DType::kInt64;
template <> inline constexpr DType kDTypeOf<Half> = DType::kFloat16;
template <> inline constexpr DType kDTypeOf<BFloat16> = DType::kBFloat16;
template <> inline constexpr DType kDTypeOf<float> = DType::kFloat32;
template <> inline constexpr DType kDTypeOf<double> = DType::kFloat64;

/** The type arithmetic on T happens in: float for the 16-bit floats, T otherwise. */
template <typename T>
using OpMath = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

/** True when T is one of rill's floating types. */
template <typename T>
inline constexpr bool kIsFloating = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                    std::is_same_v<T, BFloat16>;

/** Call f(TypeTag<T>{}) with T the C++ type of t. */
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kBool: return f(TypeTag<bool>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kFloat16: return f(TypeTag<Half>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
  }
  RILL_FAIL(Runtime, "internal error: unknown dtype code ", static_cast<int>(t));
}

/** Like visit_dtype, restricted to the floating dtypes. */
template <typename F>
decltype(auto) visit_floating_dtype(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::kFloat16: return f(TypeTag<Half>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    default: RILL_FAIL(Type, "[", op, "] expected a floating-point tensor, got ", dtype_name(t));
  }
}

}  // namespace rill
