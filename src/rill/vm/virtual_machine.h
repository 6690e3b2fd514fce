// The VM facade (DESIGN.md §3): clients submit instructions; sync points wait.
// This first version executes each instruction at once on the submitting
// thread; the threaded scheduler (issue "The threaded eager VM") replaces the
// body of submit() without changing callers.
#pragma once

#include "rill/vm/instruction.h"

namespace rill::vm {

/** Hand an instruction to the VM. Errors from its kernel surface at the next sync point. */
void submit(Instruction&& instruction);

/** Wait until every submitted instruction has finished; raises a deferred kernel error. */
void synchronize();

/** Wait until the producer of t has finished, so its memory may be read. */
void wait_readable(const Tensor& t);

/** Number of instructions submitted since start (for tests and benchmarks). */
uint64_t num_submitted();

}  // namespace rill::vm
