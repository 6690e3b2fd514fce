// Op signatures: an op's typed argument list, written once where the op is
// defined, in PyTorch's schema syntax:
//
//   softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor
//   clamp_scalar(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
//   sum(Tensor self, int[] dim, bool keepdim, ScalarType? dtype=None) -> Tensor
//   max_dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
//
// Argument types: Tensor, Tensor[], int, int[] (also int[2]), float, bool,
// ScalarType, Scalar, str; a `?` suffix accepts None; a bare `*` makes every
// later argument keyword-only. How an op call carries the arguments follows from
// the types (Note [Arguments of an op call]). Outputs may be named, all or none;
// named outputs come back to Python as a named tuple (torch.return_types.max).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rill {

/** The type of one signature argument. */
enum class ArgType : uint8_t { kTensor, kTensorList, kInt, kIntList, kFloat, kBool, kScalarType, kScalar, kStr };

/** The name of an argument type as a signature writes it ("int[]"). */
std::string_view arg_type_name(ArgType t);

/** A default value: None (monostate), a bool, an int, a float, an int list or a string (for str and dtype
 * names). */
using ArgDefault = std::variant<std::monostate, bool, int64_t, double, std::vector<int64_t>, std::string>;

/** One argument of a signature. */
struct ArgSpec {
  std::string name;
  ArgType type = ArgType::kTensor;
  bool optional = false;                   // `T?`: None is accepted
  bool kwarg_only = false;                 // after `*`
  std::optional<ArgDefault> default_value;  // nullopt: the argument is required
  /** True for the arguments an op call passes as tensors (Tensor, Tensor?, Tensor[]). */
  bool is_tensor() const { return type == ArgType::kTensor || type == ArgType::kTensorList; }
};

/** A parsed signature: name, arguments, the number of outputs and their names. */
struct Signature {
  std::string name;
  std::vector<ArgSpec> args;
  int num_outputs = 1;  // `-> Tensor`: 1, `-> (Tensor, Tensor)`: 2, `-> Tensor[]`: -1 (any number)
  std::vector<std::string> output_names;  // `-> (Tensor values, Tensor indices)`: one per output; else empty
  /** The signature as text, in the canonical spelling parse() reads back. */
  std::string str() const;
  /** Index of the argument called name in args, or -1. */
  int find(std::string_view name) const;
};

/** Parse a signature; raises RuntimeError naming the text and the position for bad syntax. */
Signature parse_signature(std::string_view text);

}  // namespace rill
