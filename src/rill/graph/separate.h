// Compiling a global job for its ranks (DESIGN.md §6, Note [Separate compilation] in separate.cpp): the logical
// half, which one rank (the master) can do for all, and each rank's own half.
#pragma once

#include <cstdint>

#include "rill/graph/compiler.h"
#include "rill/graph/infer.h"
#include "rill/graph/job.h"

namespace rill::graph {

/** One rank's part of a job: its job after every pass, and its plan. */
struct RankPart {
  ArenaJob job;
  ArenaPlan plan;
  InferStats infer;
  double compile_cpu_s = 0;  // CPU seconds of the thread that compiled it: its passes, inference, the compiler
  double compile_s = 0;      // and the seconds it took (0 for both in a part parsed from the master's bytes)
};

/** A traced job made logical in place: the logical passes, then (a global job) the task index of every logical
 * op, the master's table. */
void make_logical(Job& traced);
/** Rank rank's part of a logical job (make_logical's), compiled on a copy of it: the rank's passes, inference and
 * the compiler. */
RankPart compile_rank(const Job& logical, int64_t rank, const CompileOptions& options = {});
/** The same on the logical job itself, which becomes the part's (the master's own part, once the others have
 * theirs). */
RankPart compile_rank(ArenaJob logical, int64_t rank, const CompileOptions& options = {});
/** Both halves in place, for rank options.rank: what one process compiling its own job does. */
RankPart compile_job(ArenaJob traced, const CompileOptions& options = {});
/** Raises RuntimeError unless every id of plan is its rank's: task ids carry plan.rank, register, mem-block and
 * chunk ids are in its segment (rank_segment_id). Plans of different ranks then never collide. */
void check_plan_ids(const plan::Plan& plan);
/** CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID). */
double thread_cpu_seconds();

}  // namespace rill::graph
