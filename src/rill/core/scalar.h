// A Python number passed to an op (x + 2.5): bool, integer or float, or none
// (a `Scalar?` argument given None). Its category, not its value, takes part in
// type promotion and inference.
#pragma once

#include <cstdint>

#include "rill/core/dtype.h"

namespace rill {

/** A bool, int64 or double, or none. */
class Scalar {
 public:
  /** Which kind of number this is; kNone: absent (a `Scalar?` that is None), whose value reads as 0. */
  enum class Kind : uint8_t { kBool, kInt, kFloat, kNone };
  Scalar() : kind_(Kind::kInt), i_(0) {}
  Scalar(bool v) : kind_(Kind::kBool), i_(v) {}          // NOLINT
  Scalar(int64_t v) : kind_(Kind::kInt), i_(v) {}        // NOLINT
  Scalar(int v) : kind_(Kind::kInt), i_(v) {}            // NOLINT
  Scalar(double v) : kind_(Kind::kFloat), d_(v) {}       // NOLINT
  /** The absent scalar of a `Scalar?` argument given None (Note [Arguments of an op call]). */
  static Scalar none() {
    Scalar s;
    s.kind_ = Kind::kNone;
    return s;
  }
  Kind kind() const { return kind_; }
  /** True for none(). */
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_floating() const { return kind_ == Kind::kFloat; }
  /** Value as a double. */
  double to_double() const { return kind_ == Kind::kFloat ? d_ : static_cast<double>(i_); }
  /** Value as an int64 (floats truncate). */
  int64_t to_int() const { return kind_ == Kind::kFloat ? static_cast<int64_t>(d_) : i_; }
  /** Value converted to element type T. */
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::kFloat ? d_ != 0.0 : i_ != 0;
    } else if constexpr (kIsFloating<T>) {
      return static_cast<T>(static_cast<OpMath<T>>(to_double()));
    } else {
      return kind_ == Kind::kFloat ? static_cast<T>(d_) : static_cast<T>(i_);
    }
  }
  /** The dtype a tensor made from this scalar alone would have (default float: float32). */
  DType default_dtype() const {
    return kind_ == Kind::kBool ? DType::kBool : kind_ == Kind::kInt ? DType::kInt64 : default_float();
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace rill
