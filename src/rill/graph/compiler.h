// The compiler (DESIGN.md §6): job -> op graph -> task graph -> plan. One task per
// op per device/stream (views become view tasks, assigns and outputs copy tasks,
// ticks tick tasks), registers between them with a count, memory blocks and chunks
// for the registers the plan owns. The plan (graph/plan.proto) is what the actor
// runtime runs; compiling and running stay apart.
#pragma once

#include <cstdint>

#include "rill/graph/infer.h"
#include "rill/graph/job.h"
#include "rill/graph/job.pb.h"
#include "rill/graph/plan.pb.h"

namespace rill::graph {

struct CompileOptions {
  int64_t rank = 0;
  int32_t register_count = 1;  // buffers per register inside the piece loop (pipelining depth)
};

/** Compile a job that has been through run_passes() and infer_job(); raises rill::Error for a job it cannot
 * compile, naming the op. */
plan::Plan compile(const Job& job, const CompileOptions& options = {});
/** infer_job then compile on one index of the job's ops (a large job's graph is costly to build twice), into a
 * plan on an arena (Note [The job on an arena] in job.h): what a compiled graph runs. */
ArenaPlan infer_and_compile(Job& job, InferStats& stats, const CompileOptions& options = {});

/** The job as text: one line per op (name = op_type(inputs, attr=value...) -> outputs : descs). */
std::string job_str(const Job& job);
/** The plan as text: tasks with their ids and registers, registers with their counts and memory. */
std::string plan_str(const plan::Plan& plan);
/** "compute", "source_tick", "acc", ...: what plan_str, the runtime's messages and the trace call a task kind. */
const char* task_kind_name(plan::TaskKind kind);

}  // namespace rill::graph
