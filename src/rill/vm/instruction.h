// An instruction: one kernel call with the tensors it reads and writes
// (DESIGN.md §2 step 5). It owns its operands (shared references) until it has
// run, so Python may drop a tensor while the instruction is queued.
#pragma once

#include <vector>

#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"
#include "rill/vm/stream.h"

namespace rill::vm {

/** A kernel call: {stream, kernel, inputs, outputs} plus its attrs and scalars. */
struct Instruction {
  const OpSchema* op = nullptr;
  KernelFn kernel = nullptr;
  Stream stream;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  AttrsSym attrs;
  std::vector<Scalar> scalars;

  /** Run the kernel on this thread: allocate outputs, build views, call. */
  void run() const;
};

}  // namespace rill::vm
