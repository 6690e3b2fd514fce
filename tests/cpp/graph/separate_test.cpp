// graph/separate.cpp: a global job compiled in a logical half and each rank's half, and the ids of the plans.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job_builder.h"
#include "rill/graph/infer.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/separate.h"
#include "rill/graph/task_id.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using namespace testing;

// A data-parallel step over ranks [0, 1]: its batch split, its weight broadcast, the output's partial sum reduced.
Job data_parallel() {
  JobBuilder b("Separate");
  std::string x = b.input("x", {8, 4});
  (*b.job.mutable_ops(b.job.ops_size() - 1)->mutable_attrs())["sbp"] = S("S(0)");
  set_placement_ranks(*b.job.mutable_ops(b.job.ops_size() - 1)->mutable_placement(), {0, 1});
  std::string w = b.variable("w", {3, 4});
  std::string y = b.op("y", "linear", {x, w});
  b.output("out", b.op("r", "relu", {y}));
  b.job.mutable_conf()->set_global(true);
  InferStats stats;
  infer_job(b.job, stats);
  return b.job;
}

TEST(SeparateCompilation, EachRanksPartIsWhatOneProcessCompilesForIt) {
  Job logical = data_parallel();
  make_logical(logical);
  EXPECT_EQ(logical.conf().task_indices(), logical.ops_size());
  for (int64_t rank : {0, 1}) {
    RankPart part = compile_rank(logical, rank);
    CompileOptions options;
    options.rank = rank;
    RankPart whole = compile_job(ArenaJob(data_parallel()), options);
    EXPECT_EQ(deterministic_bytes(*part.plan), deterministic_bytes(*whole.plan)) << "rank " << rank;
    EXPECT_EQ(part.plan->rank(), rank);
    EXPECT_GT(part.compile_cpu_s, 0);
    // The task of each logical op has the index the master's table gave it; the others come after the table.
    for (const plan::Task& t : part.plan->tasks()) {
      const TaskIdParts id = decode_task_id(t.id());
      EXPECT_EQ(id.rank, rank) << t.name();
      const OpConf* op = nullptr;
      for (const OpConf& c : logical.ops())
        if (c.name() == t.name()) op = &c;
      if (op != nullptr) EXPECT_EQ(id.index, op->task_index()) << t.name();
      else EXPECT_GT(id.index, logical.conf().task_indices()) << t.name();
    }
    for (const plan::Regst& r : part.plan->regsts()) EXPECT_EQ(r.id() >> 48, rank) << r.lbn();
    EXPECT_NO_THROW(check_plan_ids(*part.plan));
  }
}

TEST(SeparateCompilation, APlanWithAnotherRanksIdIsRejected) {
  Job logical = data_parallel();
  make_logical(logical);
  RankPart part = compile_rank(logical, 1);
  plan::Plan bad = *part.plan;
  bad.mutable_regsts(0)->set_id(rank_segment_id(0, 7));
  EXPECT_THROW(check_plan_ids(bad), Error);
  bad = *part.plan;
  bad.set_rank(0);  // every task id says rank 1
  EXPECT_THROW(check_plan_ids(bad), Error);
}

TEST(SeparateCompilation, ContiguousRanksAreARange) {
  Placement p;
  set_placement_ranks(p, {2, 3, 4, 5});
  EXPECT_EQ(p.ranks_size(), 0);
  EXPECT_EQ(p.first(), 2);
  EXPECT_EQ(p.count(), 4);
  EXPECT_EQ(placement_ranks(p), (std::vector<int64_t>{2, 3, 4, 5}));
  set_placement_ranks(p, {0, 2});
  EXPECT_EQ(p.count(), 0);
  EXPECT_EQ(placement_ranks(p), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(placement_size(p), 2);
}

}  // namespace
}  // namespace rill::graph
