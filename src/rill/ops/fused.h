// _fused_elementwise: a chain of elementwise ops called as one op. Graph mode's fuse_elementwise pass
// (graph/passes/fuse_elementwise.cpp) makes these calls; the CPU kernel (kernels/cpu/fused.cpp) runs the chain tile
// by tile with each step's own kernel, so the values between steps stay in cache and never reach memory.
// See Note [Fused elementwise programs] in fused.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/scalar.h"
#include "rill/ops/attrs.h"

namespace rill {

struct OpSchema;

namespace fused {

/** The op's schema name. */
inline constexpr std::string_view kOpName = "_fused_elementwise";
/** The most steps one program may have (the kernel keeps a tile's arguments on the stack). */
inline constexpr int kMaxSteps = 64;
/** The most inputs one step may have. */
inline constexpr int kMaxStepInputs = 8;

/** Where a step's input comes from: the fused op's input `index`, or (step) the output of step `index`. */
struct Ref {
  bool step = false;
  int32_t index = 0;
  bool operator==(const Ref&) const = default;
};

/** One op call of the chain: an elementwise op (OpFlags::elementwise) with one output. */
struct Step {
  const OpSchema* op = nullptr;
  std::vector<Ref> inputs;
  AttrsSym attrs;
  std::vector<Scalar> scalars;
};

/** A chain in a topological order: steps read the op's inputs and earlier steps. */
struct Program {
  int32_t num_inputs = 0;
  std::vector<Step> steps;
  std::vector<int32_t> outputs;  // the steps whose values the op returns, in its output order
};

/** Whether op may be a step as a row step (Note [Row steps] in fused.cpp): softmax, log_softmax and their
 * backward ops, which reduce along their dim attr. */
bool is_row_step(const OpSchema& op);
/** Whether some step of p is a row step. */
bool has_row_steps(const Program& p);
/** The dims (of a shape of ndim dims, each made non-negative) along which p's row steps reduce. */
std::vector<int64_t> row_dims(const Program& p, int64_t ndim);

/** The program as the op's `program` attr (text: op names in clear, every field length-prefixed or delimited). */
std::string encode(const Program& program);
/** The program an attr holds; raises RuntimeError for text encode() did not make or a step that is not a
 * one-output elementwise op. */
Program decode(std::string_view text);
/** The program of an op call's interned attrs, decoded once per attrs and kept (the attrs live as long). */
const Program& program_of(const Attrs& attrs);

}  // namespace fused
}  // namespace rill
