// graph/memory_plan: the chain of each stream's tasks, lifetimes, reuse without overlap, the lower bound, and
// reuse turned off (Note [The memory plan]).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "job_builder.h"
#include "rill/graph/compiler.h"
#include "rill/graph/infer.h"
#include "rill/graph/memory_plan.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {
namespace {

using namespace testing;

plan::Plan compiled(Job job, int32_t register_count = 1) {
  run_passes(job);
  InferStats stats;
  infer_job(job, stats);
  return compile(job, {.rank = 0, .register_count = register_count});
}

// x -> relu x6 (each read once, by the next) -> output, and a wide branch: x -> exp -> (exp, neg) -> add -> output.
Job chain_job() {
  JobBuilder b("Memory");
  b.job.mutable_conf()->add_disabled_passes("fuse_elementwise");  // one task per op: lifetimes to check
  std::string x = b.input("x", {16, 16});
  std::string h = x;
  for (int k = 0; k < 6; ++k) h = b.op("relu" + std::to_string(k), "relu", {h});
  b.output("out", h);
  std::string e = b.op("exp", "exp", {x});
  std::string wide = b.op("wide", "add", {b.op("e2", "exp", {e}), b.op("n", "neg", {e})});
  b.output("out.wide", b.op("wt", "transpose", {wide}, {{"dim0", I(0)}, {"dim1", I(1)}}));
  return b.job;
}

struct Life {
  int start, end;
  int64_t offset, size;
};

// Lifetimes recomputed from the plan: producer to last reader, views' readers included.
std::map<int64_t, Life> lives(const plan::Plan& p) {
  std::unordered_map<int64_t, int> position;
  for (int k = 0; k < p.tasks_size(); ++k) position[p.tasks(k).id()] = k;
  std::unordered_map<int64_t, const plan::MemBlock*> block;
  for (const plan::MemBlock& b : p.mem_blocks()) block[b.id()] = &b;
  std::map<int64_t, Life> out;
  for (const plan::Regst& r : p.regsts())
    if (r.kind() == plan::REGST_OWNED) {
      const plan::MemBlock& b = *block.at(r.mem_block_id());
      out[r.id()] = {position.at(r.producer()), position.at(r.producer()), b.offset(), b.size()};
    }
  for (const plan::Regst& r : p.regsts()) {
    auto it = out.find(r.kind() == plan::REGST_VIEW ? r.alias_of() : r.id());
    if (it == out.end()) continue;
    for (int64_t c : r.consumers()) it->second.end = std::max(it->second.end, position.at(c));
  }
  return out;
}

TEST(GraphMemoryPlan, RegistersWhoseLifetimesOverlapNeverShareMemory) {
  plan::Plan p = compiled(chain_job());
  auto l = lives(p);
  int64_t sum = 0;
  int shared = 0;
  for (auto& [a, x] : l) {
    sum += x.size;
    for (auto& [b, y] : l) {
      if (a >= b) continue;
      const bool together = x.start <= y.end && y.start <= x.end;
      const bool overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      EXPECT_FALSE(together && overlap) << a << " and " << b;
      shared += overlap;
    }
  }
  EXPECT_GT(shared, 0);  // the relu chain needs two buffers, not six
  EXPECT_LT(p.planned_peak_bytes(), sum);
  EXPECT_GE(p.planned_peak_bytes(), p.live_bytes_lower_bound());
  EXPECT_EQ(p.planned_peak_bytes(), p.chunks(0).size());
  // 16 x 16 float32 = 1 KiB a buffer: the chain and the branch never need more than three at once.
  EXPECT_EQ(p.live_bytes_lower_bound(), 3 * 1024);
  EXPECT_EQ(p.planned_peak_bytes(), 3 * 1024);
}

TEST(GraphMemoryPlan, EachStreamRunsInPlanOrder) {
  plan::Plan p = compiled(chain_job());
  std::unordered_map<int64_t, const plan::Regst*> regst;
  for (const plan::Regst& r : p.regsts()) regst[r.id()] = &r;
  for (int k = 1; k < p.tasks_size(); ++k) {
    const plan::Task& t = p.tasks(k);
    const bool after_previous = std::any_of(t.in_regsts().begin(), t.in_regsts().end(), [&](int64_t r) {
      return regst.at(r)->producer() == p.tasks(k - 1).id();
    });
    EXPECT_TRUE(after_previous) << t.name() << " does not wait for " << p.tasks(k - 1).name();
  }
}

TEST(GraphMemoryPlan, ReuseOffOrPipelinedGivesEachRegisterItsOwnMemory) {
  Job off = chain_job();
  off.mutable_conf()->add_disabled_passes(kMemoryReuse);
  for (const plan::Plan& p : {compiled(off), compiled(chain_job(), 2)}) {
    int64_t sum = 0;
    for (const plan::MemBlock& b : p.mem_blocks()) sum += b.size();
    EXPECT_EQ(p.planned_peak_bytes(), sum);
    auto l = lives(p);
    for (auto& [a, x] : l)
      for (auto& [b, y] : l)
        EXPECT_TRUE(a == b || x.offset + x.size <= y.offset || y.offset + y.size <= x.offset) << a << " " << b;
  }
  EXPECT_EQ(compiled(off).live_bytes_lower_bound(), compiled(chain_job()).live_bytes_lower_bound());
}

}  // namespace
}  // namespace rill::graph
