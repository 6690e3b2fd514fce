// PyTorch's category-aware type promotion (docs/architecture.md §4): tensors with
// dimensions decide first; a 0-dim tensor or a Python number only widens the
// result when it is of a higher category (bool < integer < floating).
//
// Strict dtype mode (docs/architecture.md §4) forbids every implicit conversion.
// Inference functions compute result dtypes through the *_checked helpers
// below, which raise TypeError under strict mode on the branch where promotion
// actually converts something (Note [Strict dtype mode]).
#pragma once

#include <span>
#include <string_view>

#include "rill/core/scalar.h"
#include "rill/core/tensor_meta.h"
#include "rill/ops/op_schema.h"

namespace rill {

/** Result dtype of an op over these tensor operands and Python numbers (an absent Scalar takes no part). */
DType result_type(std::span<const MetaSym> tensors, std::span<const Scalar> scalars);

/** dtype for ops that always produce floats (sqrt, exp, true division): ints and bool become the default float. */
inline DType to_floating(DType t) { return dtype_is_floating(t) ? t : default_float(); }

// --- strict dtype mode --------------------------------------------------------------------

/** True when strict dtype mode is on for the calling thread: its own setting, else the process default
 * (RILL_STRICT_DTYPE, re-read when an env override changes). */
bool strict_dtype();
/** The calling thread's own setting: 1 on, 0 off, -1 follows the process default. */
int strict_dtype_setting();
/** Set the calling thread's setting (1 on, 0 off, -1 follow the process default). */
void set_strict_dtype_setting(int setting);

/** Sets strict dtype mode for a scope and restores the thread's previous setting when it ends. */
class StrictDtypeGuard {
 public:
  explicit StrictDtypeGuard(bool on) : previous_(strict_dtype_setting()) { set_strict_dtype_setting(on ? 1 : 0); }
  ~StrictDtypeGuard() { set_strict_dtype_setting(previous_); }
  StrictDtypeGuard(const StrictDtypeGuard&) = delete;
  StrictDtypeGuard& operator=(const StrictDtypeGuard&) = delete;

 private:
  int previous_;
};

/** result_type of the op's tensors and numbers for inference; under strict mode, TypeError when the tensors'
 * dtypes differ or a number is of a higher category than the tensors (a Python float with an int tensor). */
DType result_type_checked(const InferContext& c, std::span<const MetaSym> tensors,
                          std::span<const Scalar> scalars);
/** result_type_checked over all of the op's inputs and numbers. */
inline DType result_type_checked(const InferContext& c) { return result_type_checked(c, c.inputs, c.scalars); }
/** to_floating(t) for inference; under strict mode, TypeError when t is not floating (an int tensor made
 * float by true division, sqrt, exp, ...). */
DType to_floating_checked(const InferContext& c, DType t);
/** Under strict mode, TypeError when a value of dtype value is written into a tensor of dtype dest (in-place
 * ops, out=, copy_, x[i] = v); what names the value ("src"), fix the expression to convert ("src"; empty: the
 * operands). */
void check_strict_store(std::string_view op, DType value, DType dest, std::string_view what = "the result",
                        std::string_view fix = "");
/** Under strict mode, TypeError when a Python number of kind s is stored into (or combined with) a tensor of
 * dtype dest of a lower category (a float into an int tensor, an int into a bool tensor). */
void check_strict_number(std::string_view op, Scalar s, DType dest);

}  // namespace rill
