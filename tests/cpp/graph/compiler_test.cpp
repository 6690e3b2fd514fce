// graph/compiler: task ids, register kinds and counts, view aliasing, binding order, memory, errors, printing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "job_builder.h"
#include "rill/graph/compiler.h"
#include "rill/graph/infer.h"
#include "rill/graph/passes/pass.h"
#include "rill/graph/task_id.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using namespace testing;

// The passes, but writes in place (their test is in passes_test.cpp): these tests look at the copies.
void prepare(Job& job) {
  job.mutable_conf()->add_disabled_passes("write_in_place");
  run_passes(job);
  InferStats stats;
  infer_job(job, stats);
}

const plan::Task& task_named(const plan::Plan& p, const std::string& name) {
  for (const plan::Task& t : p.tasks())
    if (t.name() == name) return t;
  throw std::runtime_error("no task " + name);
}

const plan::Regst& regst_with_id(const plan::Plan& p, int64_t id) {
  for (const plan::Regst& r : p.regsts())
    if (r.id() == id) return r;
  throw std::runtime_error("no regst " + std::to_string(id));
}

// x -> linear(w, b) -> relu -> output; w.t() viewed and narrowed, its relu an output; an assign into w.
Job small_job() {
  JobBuilder b("Compile");
  std::string x = b.input("x", {2, 3});
  std::string w = b.variable("fc.weight", {4, 3});
  std::string bias = b.variable("fc.bias", {4}, false);
  std::string y = b.op("fc.linear", "linear", {x, w, bias});
  std::string r = b.op("relu", "relu", {y});
  b.output("out", r);
  std::string wt = b.op("wt", "transpose", {w}, {{"dim0", I(0)}, {"dim1", I(1)}});
  std::string n = b.op("wt.narrow", "narrow", {wt}, {{"dim", I(1)}, {"start", I(1)}, {"length", I(2)}});
  b.output("out.w", b.op("wt.neg", "neg", {n}));
  b.assign("fc.weight.assign", w, b.op("sgd", "mul_scalar", {w}, {}, {Sf(0.9)}, "optimizer"));
  return b.job;
}

TEST(GraphCompiler, TaskIdsDecodeToRankStreamAndIndex) {
  Job job = small_job();
  prepare(job);
  plan::Plan p = compile(job, {.rank = 3, .register_count = 1});
  int non_tasks = 0;
  for (const OpConf& op : job.ops()) non_tasks += op.op_type() == "variable" || op.op_type() == "input";
  EXPECT_EQ(p.tasks_size(), job.ops_size() - non_tasks);  // one task per op but the bindings
  for (int i = 0; i < p.tasks_size(); ++i) {
    graph::TaskIdParts parts = graph::decode_task_id(p.tasks(i).id());
    EXPECT_EQ(parts.rank, 3);
    EXPECT_EQ(parts.stream, 0);
    EXPECT_EQ(parts.device_type, DeviceType::kCPU);
    EXPECT_EQ(parts.index, i + 1);  // 0 is no task's
  }
  for (const plan::Regst& r : p.regsts()) EXPECT_EQ(r.id() >> 48, 3);
  for (const plan::MemBlock& b : p.mem_blocks()) EXPECT_EQ(b.id() >> 48, 3);
  ASSERT_EQ(p.chunks_size(), 1);
  EXPECT_EQ(p.chunks(0).id() >> 48, 3);
}

TEST(GraphCompiler, TaskAndRegisterKinds) {
  Job job = small_job();
  prepare(job);
  plan::Plan p = compile(job);
  const plan::Task& linear = task_named(p, "fc.linear");
  EXPECT_EQ(linear.kind(), plan::TASK_COMPUTE);
  EXPECT_EQ(linear.op(), "linear");
  EXPECT_FALSE(linear.random());
  ASSERT_GE(linear.in_regsts_size(), 3);
  EXPECT_EQ(regst_with_id(p, linear.in_regsts(0)).kind(), plan::REGST_INPUT);
  EXPECT_EQ(regst_with_id(p, linear.in_regsts(1)).kind(), plan::REGST_VARIABLE);
  EXPECT_EQ(regst_with_id(p, linear.in_regsts(1)).producer(), 0);
  const plan::Regst& y = regst_with_id(p, linear.out_regsts(0));
  EXPECT_EQ(y.kind(), plan::REGST_OWNED);
  EXPECT_EQ(y.producer(), linear.id());
  EXPECT_EQ(y.consumers_size(), 1);
  EXPECT_EQ(y.consumers(0), task_named(p, "relu").id());
  EXPECT_EQ(y.lbn(), "fc.linear/out0");

  const plan::Task& out = task_named(p, "out");
  EXPECT_EQ(out.kind(), plan::TASK_COPY);
  EXPECT_EQ(regst_with_id(p, out.out_regsts(0)).kind(), plan::REGST_OUTPUT);

  // The assign copies its value into the variable's own register.
  const plan::Task& assign = task_named(p, "fc.weight.assign");
  EXPECT_EQ(assign.kind(), plan::TASK_COPY);
  EXPECT_EQ(assign.out_regsts(0), linear.in_regsts(1));
  EXPECT_EQ(regst_with_id(p, assign.in_regsts(0)).producer(), task_named(p, "sgd").id());

  // Ticks: a source tick whose ctrl register the variable-only ops read, a sink joining the leaves.
  int sources = 0, sinks = 0;
  for (const plan::Task& t : p.tasks()) {
    sources += t.kind() == plan::TASK_SOURCE_TICK;
    sinks += t.kind() == plan::TASK_SINK_TICK;
    if (t.kind() == plan::TASK_SOURCE_TICK) {
      ASSERT_EQ(t.out_regsts_size(), 1);
      const plan::Regst& ctrl = regst_with_id(p, t.out_regsts(0));
      EXPECT_EQ(ctrl.kind(), plan::REGST_CTRL);
      EXPECT_NE(std::find(ctrl.consumers().begin(), ctrl.consumers().end(), task_named(p, "wt").id()),
                ctrl.consumers().end());
    }
    if (t.kind() == plan::TASK_SINK_TICK) {
      EXPECT_EQ(t.out_regsts_size(), 0);
      for (int64_t in : t.in_regsts()) EXPECT_EQ(regst_with_id(p, in).kind(), plan::REGST_CTRL);
    }
  }
  EXPECT_EQ(sources, 1);
  EXPECT_EQ(sinks, 1);
  // A register's producer lists it as an output and its consumers as an input.
  for (const plan::Regst& r : p.regsts()) {
    for (int64_t c : r.consumers()) {
      bool found = false;
      for (const plan::Task& t : p.tasks())
        if (t.id() == c) found = std::find(t.in_regsts().begin(), t.in_regsts().end(), r.id()) != t.in_regsts().end();
      EXPECT_TRUE(found) << r.lbn();
    }
  }
}

TEST(GraphCompiler, ViewsAliasTheirRootRegister) {
  Job job = small_job();
  prepare(job);
  plan::Plan p = compile(job);
  const plan::Task& wt = task_named(p, "wt");
  const plan::Task& narrow = task_named(p, "wt.narrow");
  EXPECT_EQ(wt.kind(), plan::TASK_VIEW);
  EXPECT_EQ(narrow.kind(), plan::TASK_VIEW);
  const int64_t weight = task_named(p, "fc.linear").in_regsts(1);
  const plan::Regst& v1 = regst_with_id(p, wt.out_regsts(0));
  const plan::Regst& v2 = regst_with_id(p, narrow.out_regsts(0));
  EXPECT_EQ(v1.kind(), plan::REGST_VIEW);
  EXPECT_EQ(v1.alias_of(), weight);
  EXPECT_EQ(v2.kind(), plan::REGST_VIEW);
  EXPECT_EQ(v2.alias_of(), weight);     // the root, not the view it came from
  EXPECT_EQ(v2.desc().offset(), 3);     // columns 1.. of w.t(): row 1 of w (3 elements in)
  EXPECT_EQ(v2.desc().strides(0), 1);
  EXPECT_EQ(v2.desc().strides(1), 3);
}

TEST(GraphCompiler, BindingsFollowTheirIndex) {
  JobBuilder b("Bindings");
  // Variables traced in another order than their indices.
  std::string w1 = b.op("second", "variable", {},
                        {{"index", I(1)}, {"shape", Ints({2})}, {"dtype", S("float32")}, {"trainable", B(true)}},
                        {}, "");
  std::string w0 = b.op("first", "variable", {},
                        {{"index", I(0)}, {"shape", Ints({3})}, {"dtype", S("float32")}, {"trainable", B(true)}},
                        {}, "");
  std::string x = b.input("x", {3});
  std::string y = b.input("y", {2}, "float64");
  b.output("o0", b.op("s0", "add", {w0, x}));
  b.output("o1", b.op("s1", "neg", {y}));
  b.assign("second.assign", w1, b.op("upd", "neg", {w1}, {}, {}, "optimizer"));
  prepare(b.job);
  plan::Plan p = compile(b.job);
  ASSERT_EQ(p.variables_size(), 2);
  EXPECT_EQ(p.variables(0).name(), "first");
  EXPECT_EQ(p.variables(0).desc().shape(0), 3);
  EXPECT_FALSE(p.variables(0).written());
  EXPECT_EQ(p.variables(1).name(), "second");
  EXPECT_TRUE(p.variables(1).written());
  ASSERT_EQ(p.inputs_size(), 2);
  EXPECT_EQ(p.inputs(1).dtype(), "float64");
  ASSERT_EQ(p.outputs_size(), 2);
  EXPECT_EQ(p.outputs(0).shape(0), 3);
  EXPECT_EQ(p.outputs(1).dtype(), "float64");
  for (const plan::Regst& r : p.regsts()) {
    if (r.kind() == plan::REGST_VARIABLE) {
      EXPECT_EQ(p.variables(r.binding()).desc().shape(0), r.desc().shape(0));
    }
    if (r.kind() == plan::REGST_OUTPUT) {
      EXPECT_EQ(r.producer(), task_named(p, "o" + std::to_string(r.binding())).id());
    }
  }
}

TEST(GraphCompiler, CountsAndMemory) {
  Job job = small_job();
  prepare(job);
  plan::Plan p = compile(job, {.rank = 0, .register_count = 3});
  int64_t blocks = 0;
  std::map<int64_t, const plan::MemBlock*> block_of;
  for (const plan::MemBlock& b : p.mem_blocks()) {
    EXPECT_EQ(b.offset() % 64, 0);
    EXPECT_EQ(b.size() % 64, 0);
    EXPECT_EQ(b.chunk_id(), p.chunks(0).id());
    blocks += b.size();
    block_of[b.id()] = &b;
  }
  for (const plan::Regst& r : p.regsts()) {
    if (r.kind() == plan::REGST_OWNED) {
      EXPECT_EQ(r.count(), 3) << r.lbn();  // one piece: every task is in the piece loop
      ASSERT_TRUE(block_of.count(r.mem_block_id())) << r.lbn();
      int64_t numel = 1;
      for (int64_t s : r.desc().shape()) numel *= s;
      EXPECT_GE(block_of[r.mem_block_id()]->size(), 3 * numel * 4) << r.lbn();
    }
    if (r.kind() == plan::REGST_VARIABLE || r.kind() == plan::REGST_INPUT || r.kind() == plan::REGST_OUTPUT) {
      EXPECT_EQ(r.count(), 1) << r.lbn();
    }
  }
  EXPECT_EQ(p.planned_peak_bytes(), p.chunks(0).size());
  EXPECT_EQ(p.chunks(0).size(), blocks);
  // relu's output: 2 x 4 float32 = 32 bytes, three buffers -> 96, one 128-byte block.
  const plan::Regst& relu = regst_with_id(p, task_named(p, "relu").out_regsts(0));
  EXPECT_EQ(block_of[relu.mem_block_id()]->size(), 128);
}

TEST(GraphCompiler, RandomOpsAreMarked) {
  JobBuilder b("Random");
  std::string x = b.input("x", {8});
  OpConf& d = b.add("drop", "dropout", {x}, {{"p", F(0.5)}}, {Si(0), Si(0)}, "forward", 2);
  b.output("o", d.outputs(0));
  prepare(b.job);
  plan::Plan p = compile(b.job);
  const plan::Task& t = task_named(p, "drop");
  EXPECT_TRUE(t.random());
  EXPECT_EQ(t.scalars_size(), 2);
  EXPECT_EQ(t.attrs().at("p").f(), 0.5);
  EXPECT_EQ(t.out_regsts_size(), 2);  // the mask too, read by no one
}

void expect_compile_error(Job job, const std::string& needle, bool passes = true) {
  if (passes) prepare(job);
  try {
    compile(job);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GraphCompiler, ErrorsNameTheOp) {
  {
    JobBuilder b("NoKernel");
    std::string x = b.input("x", {2, 3});
    b.output("o", b.op("model.lse", "logsumexp", {x}, {{"dim", Ints({1})}, {"keepdim", B(false)}}));
    expect_compile_error(b.job, "[model.lse]");
  }
  {
    Job job = small_job();
    job.mutable_conf()->add_disabled_passes("fuse_elementwise");  // it would infer the job to find its chains
    run_passes(job);  // not inferred
    expect_compile_error(job, "run infer_job()", false);
  }
  {
    JobBuilder b("StaleDescs", 2);
    b.job.mutable_conf()->add_disabled_passes("fuse_elementwise");  // it would infer the split job afresh
    b.output("o", b.op("y", "neg", {b.input("x", {4, 2})}));
    InferStats stats;
    infer_job(b.job, stats);  // before the passes: x's desc is the whole batch
    run_passes(b.job);
    for (OpConf& op : *b.job.mutable_ops())
      if (op.output_descs_size() != op.outputs_size()) *op.mutable_output_descs() = find_op(b.job, "y")->output_descs();
    expect_compile_error(b.job, "[x] the input's desc does not match", false);
  }
  {
    JobBuilder b("IndexGap");
    std::string x = b.input("x", {2});
    b.add("o", "output", {x}, {{"index", I(1)}}, {}, "", 0);
    expect_compile_error(b.job, "[o] output index 1 is out of range");
  }
  {
    JobBuilder b("AssignedTwice");
    std::string w = b.variable("w", {2});
    b.assign("first.assign", w, b.op("one", "neg", {w}, {}, {}, "optimizer"));
    b.assign("second.assign", w, b.op("two", "abs", {w}, {}, {}, "optimizer"));
    expect_compile_error(b.job, "is assigned twice");
  }
  {
    JobBuilder b("NoTicks");
    b.output("o", b.input("x", {2}));
    InferStats stats;
    infer_job(b.job, stats);
    expect_compile_error(b.job, "run run_passes()", false);
  }
}

TEST(GraphCompiler, PlanStrHasALinePerTaskAndRegister) {
  Job job = small_job();
  prepare(job);
  plan::Plan p = compile(job);
  const std::string text = plan_str(p);
  EXPECT_NE(text.find("compute fc.linear = linear()"), std::string::npos) << text;
  EXPECT_NE(text.find("view wt.narrow = narrow("), std::string::npos) << text;
  EXPECT_NE(text.find("source_tick"), std::string::npos) << text;
  const int64_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, 1 + p.tasks_size() + p.regsts_size() + p.mem_blocks_size() + p.chunks_size());
}

}  // namespace
}  // namespace rill::graph
