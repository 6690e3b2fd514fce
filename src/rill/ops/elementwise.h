// Names of the elementwise op families, shared by their schemas (ops/),
// kernels (kernels/cpu/) and bindings, so each list is written once.
#pragma once

#include <string_view>
#include <vector>

namespace rill {

/** Unary ops whose output keeps the input dtype. */
inline const std::vector<std::string_view> kUnarySameOps = {"neg", "abs", "relu"};
/** Unary ops computed in floating point (integer inputs become float32). */
inline const std::vector<std::string_view> kUnaryFloatOps = {"exp", "log", "sqrt", "sigmoid", "tanh"};
/** Binary arithmetic ops on the promoted dtype; each also has `<op>_scalar` and `r<op>_scalar`. */
inline const std::vector<std::string_view> kBinaryArithOps = {"add", "sub", "mul", "pow", "maximum", "minimum"};
/** Comparisons (bool output); each also has `<op>_scalar`. */
inline const std::vector<std::string_view> kCompareOps = {"eq", "ne", "lt", "le", "gt", "ge"};

}  // namespace rill
