// The actor runtime (DESIGN.md §6): runs a plan (graph/plan.proto), one actor per
// task. Actors exchange "register ready" and "register free" messages; a
// register's count bounds how far its producer runs ahead; the source tick starts
// the pieces of an iteration and the sink tick ends it. Building a plan (graph/)
// and running it (here) stay apart, as taskflow keeps Taskflow apart from
// Executor. See Note [Actors] in runtime.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rill/graph/job.h"
#include "rill/graph/plan.pb.h"

namespace rill::runtime {

/** The memory of a plan's external registers for one iteration: data pointers (element 0 of each tensor, laid out
 * as the plan's descs say), in the plan's binding order. */
struct Bindings {
  std::span<void* const> variables;
  std::span<void* const> inputs;
  std::span<void* const> outputs;
  int64_t seed = 0;           // the generator's seed and the offset this launch draws from (Task.random)
  int64_t random_offset = 0;
  int64_t random_piece_numbers = 0;  // numbers one piece draws: piece k of a random task draws k times as far on
};

/** Counters of a runtime, for g.stats() and tests. */
struct RuntimeStats {
  int64_t iterations = 0;
  int64_t acts = 0;          // actor acts, all tasks
  int64_t messages = 0;      // ready and free messages sent
  int64_t owned_bytes = 0;   // the plan's chunks
};

/** What one SSP proxy saw (Note [SSP] in graph/passes/ssp.cpp): for each piece of the last launch, how many
 * earlier pieces' updates the copy its forward and backward read lacked, never more than bound. */
struct SspRecord {
  std::string variable;
  int64_t stage = 0;
  int64_t bound = 0;
  std::vector<int64_t> staleness;
  int64_t max_staleness = 0;  // since the runtime was made
};

class Runtime {
 public:
  /** Build the actors of plan and allocate its chunks; raises rill::Error (RuntimeError) for an inconsistent plan
   * (an unknown op, a register without a producer, a cycle the ticks cannot start). name: what the graph trace
   * calls it (RILL_GRAPH_TRACE, runtime/trace.h). */
  explicit Runtime(graph::ArenaPlan plan, std::string name = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /** Run one iteration (plan.pieces pieces) on bindings and return when it has ended. Actors of stream 0 run on the
   * calling thread; other streams on the runtime's own threads. A kernel error ends the iteration (the rest of
   * the actors drain without computing) and is raised here as rill::Error naming the task and the user's line. */
  void run(const Bindings& bindings);
  const plan::Plan& plan() const;
  RuntimeStats stats() const;
  /** The SSP proxies' records, in plan order (none without SSP); read between launches. */
  std::vector<SspRecord> ssp() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::runtime
