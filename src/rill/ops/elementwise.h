// Names of the elementwise op families, shared by their schemas (ops/),
// kernels (kernels/cpu/) and bindings, so each list is written once.
#pragma once

#include <string_view>
#include <vector>

namespace rill {

/** Unary ops whose output keeps the input dtype. */
inline const std::vector<std::string_view> kUnarySameOps = {"neg", "abs", "relu", "sign"};
/** Rounding ops: same dtype out (integers pass through), no bool; their gradient is zero. */
inline const std::vector<std::string_view> kRoundingOps = {"floor", "ceil", "trunc", "round"};
/** Unary ops computed in floating point (integer inputs become float32). */
inline const std::vector<std::string_view> kUnaryFloatOps = {"exp",  "log", "sqrt", "sigmoid", "tanh",  "log1p",
                                                             "expm1", "rsqrt", "sin", "cos",    "erf", "reciprocal"};
/** Activations on floating tensors (same dtype out), with their number arguments as scalars:
 * silu(), gelu() (attr: approximate), softplus(beta, threshold), leaky_relu(negative_slope), elu(alpha),
 * hardtanh(min_val, max_val) (hardtanh also takes integer tensors). */
inline const std::vector<std::string_view> kActivationOps = {"silu", "gelu", "softplus", "leaky_relu", "elu",
                                                             "hardtanh"};
/** Binary arithmetic ops on the promoted dtype; each also has `<op>_scalar` and `r<op>_scalar`. */
inline const std::vector<std::string_view> kBinaryArithOps = {"add", "sub", "mul", "pow", "maximum", "minimum"};
/** Floor division and remainders (no bool); integer division by zero raises; each also has `<op>_scalar` and
 * `r<op>_scalar`. */
inline const std::vector<std::string_view> kDivModOps = {"floor_divide", "remainder", "fmod"};
/** Bitwise ops on integer and bool tensors; each also has `<op>_scalar` and `r<op>_scalar`. */
inline const std::vector<std::string_view> kBitwiseOps = {"bitwise_and", "bitwise_or", "bitwise_xor"};
/** Logical ops: inputs of any dtype read as bool, bool output (logical_not is unary). */
inline const std::vector<std::string_view> kLogicalOps = {"logical_and", "logical_or", "logical_xor"};
/** Comparisons (bool output); each also has `<op>_scalar`. */
inline const std::vector<std::string_view> kCompareOps = {"eq", "ne", "lt", "le", "gt", "ge"};

}  // namespace rill
