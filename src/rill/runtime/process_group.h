// The process group as the runtime sees it (DESIGN.md §1: comm sits above runtime, so runtime names no comm
// header): comm registers this process's rank and the comm stream once its group is up, and clears them at
// finalize and in a forked child. A global graph compiles for that rank and, when its plan communicates,
// launches on that stream (Note [Graphs that communicate] in compiled_graph.cpp); the trace names the rank.
#pragma once

#include <optional>

#include "rill/vm/stream.h"

namespace rill::runtime {

/** This process in the running process group. */
struct ProcessGroup {
  int rank = 0;
  vm::Stream stream;  // the comm stream: the one thread that calls the communication library
};

/** Set (or, with nullopt, clear) the running process group; called by the comm layer. */
void set_process_group(std::optional<ProcessGroup> group);
/** The running process group, or nullopt when none is (no rill.distributed, or after it ended). */
std::optional<ProcessGroup> process_group();

}  // namespace rill::runtime
