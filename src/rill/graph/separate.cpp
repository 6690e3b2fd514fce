#include "rill/graph/separate.h"

#include <time.h>

#include <chrono>
#include <string>
#include <utility>

#include "rill/graph/passes/pass.h"
#include "rill/graph/task_id.h"
#include "rill/util/error.h"

namespace rill::graph {

// Note [Separate compilation]
// A global job is compiled in two halves. The logical half is the same for every rank: the passes up to
// sbp_signatures (placements, the rewrites, each op's SBP signature, so where the boxing goes), and then the
// task table: each logical op gets the index its task has on every rank (OpConf.task_index, 1 .. n in the
// logical job's order). The rank's half lowers the job to that rank (the boxing ops, its own shapes, the other
// ranks' ops gone), runs the rank's passes, inference and the compiler. Task ids are rank | device | stream |
// index (task_id.h): the task of logical op i on rank r is (r, cpu, stream, task_index(i)) whichever process
// compiled it, so any rank can name another's task of op i without compiling that rank's plan; the tasks a rank
// adds (boxing, ticks) take indices after the table's, under its own rank bits; register, mem-block and chunk
// ids are (rank << 48) + a counter. No two ranks' plans can share an id, and check_plan_ids rejects a plan
// with one outside its rank's (the runtime, at load), as the runtime rejects one id twice.
// How the halves are spread over processes is nn.Graph's (python/rill/graph/__init__.py):
//   naive     the master (rank 0) runs the logical half once and the rank's half for every rank, and sends
//             each rank its part (job and plan): its CPU time and bytes grow with the world;
//   separate  the master runs the logical half and sends the logical job (table included) to every rank, which
//             compiles its own part: each rank's time stays that of one rank's plan, the master's bytes grow
//             with the world times the job.
// Both give a rank the same plan: the halves are the same code, and where they run changes nothing in them.

void make_logical(Job& traced) {
  run_logical_passes(traced);
  if (!traced.conf().global()) return;
  int64_t index = 0;
  for (OpConf& op : *traced.mutable_ops()) op.set_task_index(++index);
  traced.mutable_conf()->set_task_indices(index);
}

namespace {

using Clock = std::chrono::steady_clock;

RankPart compile_logical(ArenaJob job, int64_t rank, CompileOptions options, double start_cpu, Clock::time_point start) {
  job->mutable_conf()->set_rank(static_cast<int32_t>(rank));
  options.rank = rank;
  run_rank_passes(*job);
  RankPart part;
  part.plan = infer_and_compile(*job, part.infer, options);
  part.job = std::move(job);
  part.compile_cpu_s = thread_cpu_seconds() - start_cpu;
  part.compile_s = std::chrono::duration<double>(Clock::now() - start).count();
  return part;
}

}  // namespace

RankPart compile_rank(const Job& logical, int64_t rank, const CompileOptions& options) {
  const auto start = Clock::now();
  const double start_cpu = thread_cpu_seconds();
  return compile_logical(ArenaJob(logical), rank, options, start_cpu, start);
}

RankPart compile_rank(ArenaJob logical, int64_t rank, const CompileOptions& options) {
  const auto start = Clock::now();
  const double start_cpu = thread_cpu_seconds();
  return compile_logical(std::move(logical), rank, options, start_cpu, start);
}

RankPart compile_job(ArenaJob traced, const CompileOptions& options) {
  const auto start = Clock::now();
  const double start_cpu = thread_cpu_seconds();
  make_logical(*traced);
  return compile_logical(std::move(traced), options.rank, options, start_cpu, start);
}

void check_plan_ids(const plan::Plan& plan) {
  const int64_t rank = plan.rank();
  auto fail = [&](const std::string& what, int64_t id) {
    RILL_FAIL(Runtime, "[runtime] bad plan: ", what, " ", id, " is not rank ", rank,
              "'s (the plan's rank): plans of different ranks would collide on it");
  };
  for (const plan::Task& t : plan.tasks())
    if (decode_task_id(t.id()).rank != rank) fail("task '" + t.name() + "' has id", t.id());
  auto in_segment = [&](int64_t id) { return (id >> 48) == rank; };
  for (const plan::Regst& r : plan.regsts())
    if (!in_segment(r.id())) fail("register '" + r.lbn() + "' has id", r.id());
  for (const plan::MemBlock& b : plan.mem_blocks())
    if (!in_segment(b.id())) fail("mem block", b.id());
  for (const plan::Chunk& c : plan.chunks())
    if (!in_segment(c.id())) fail("chunk", c.id());
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace rill::graph
