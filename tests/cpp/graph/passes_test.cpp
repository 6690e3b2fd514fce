// graph/passes: dead ops, CSE, gradient accumulation, auto-tick and the pass order.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <span>

#include "job_builder.h"
#include "rill/ops/fused.h"
#include "rill/ops/op_schema.h"
#include "rill/graph/compiler.h"
#include "rill/graph/infer.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using namespace testing;

bool has_ctrl(const OpConf& op, const std::string& name) {
  return std::find(op.ctrl_inputs().begin(), op.ctrl_inputs().end(), name) != op.ctrl_inputs().end();
}

TEST(GraphPasses, DeadOpEliminationKeepsOutputsAssignsAndBindings) {
  JobBuilder b("Dce");
  std::string x = b.input("x", {4});
  std::string w = b.variable("w", {4});
  std::string unused_var = b.variable("unused", {2});
  b.op("dead", "relu", {x});
  std::string dead2 = b.op("dead2", "neg", {x});
  b.op("dead3", "abs", {dead2});
  std::string y = b.op("y", "add", {x, w});
  b.output("out", y);
  std::string step = b.op("step", "mul_scalar", {w}, {}, {Sf(0.5)}, "optimizer");
  b.assign("w.assign", w, step);
  dead_op_elimination(b.job);
  EXPECT_EQ(find_op(b.job, "dead"), nullptr);
  EXPECT_EQ(find_op(b.job, "dead2"), nullptr);
  EXPECT_EQ(find_op(b.job, "dead3"), nullptr);
  for (const char* kept : {"x", "w", "unused", "y", "out", "step", "w.assign"})
    EXPECT_NE(find_op(b.job, kept), nullptr) << kept;
}

TEST(GraphPasses, CseMergesIdenticalAddsButNotDropouts) {
  JobBuilder b("Cse");
  std::string x = b.input("x", {4});
  std::string y = b.input("y", {4});
  std::string a1 = b.op("a1", "add", {x, y});
  std::string a2 = b.op("a2", "add", {x, y});
  std::string r1 = b.op("r1", "relu", {a1});
  std::string r2 = b.op("r2", "relu", {a2});  // the same once a2 is a1
  std::string s1 = b.op("s1", "mul_scalar", {x}, {}, {Sf(2.0)});
  std::string s2 = b.op("s2", "mul_scalar", {x}, {}, {Sf(3.0)});  // another scalar: kept
  OpConf& d1 = b.add("d1", "dropout", {x}, {{"p", F(0.5)}}, {Si(0), Si(0)}, "forward", 2);
  OpConf& d2 = b.add("d2", "dropout", {x}, {{"p", F(0.5)}}, {Si(0), Si(0)}, "forward", 2);
  std::string d1_out = d1.outputs(0), d2_out = d2.outputs(0);
  b.output("o1", r1);
  b.output("o2", r2);
  b.output("o3", s1);
  b.output("o4", s2);
  b.output("o5", d1_out);
  b.output("o6", d2_out);
  common_subexpression_elimination(b.job);
  EXPECT_EQ(count_ops(b.job, "add"), 1);
  EXPECT_EQ(count_ops(b.job, "relu"), 1);
  EXPECT_EQ(count_ops(b.job, "mul_scalar"), 2);
  EXPECT_EQ(count_ops(b.job, "dropout"), 2);
  EXPECT_EQ(find_op(b.job, "o2")->inputs(0), r1);
  EXPECT_EQ(find_op(b.job, "o6")->inputs(0), d2_out);
  InferStats stats;
  infer_job(b.job, stats);  // still a valid job
}

// A train step: forward (linear, loss), backward (a stand-in gradient), optimizer (w - 0.1 * g), assign.
Job train_job(const std::string& name, int steps, int64_t batch = 8) {
  JobBuilder b(name, steps);
  b.job.mutable_conf()->set_train(true);
  b.job.mutable_conf()->add_disabled_passes("fuse_elementwise");  // these tests look at the optimizer's own ops
  std::string x = b.input("x", {batch, 4});
  std::string w = b.variable("fc.weight", {3, 4});
  std::string y = b.op("fc.linear", "linear", {x, w});
  std::string loss = b.op("loss", "sum", {y},
                          {{"dim", Ints({})}, {"keepdim", B(false)}, {"dtype", plan::AttrValue()}});
  std::string gy = b.op("grad.y", "mul_scalar", {y}, {}, {Sf(2.0)}, "backward");
  std::string gyt = b.op("grad.yt", "transpose", {gy}, {{"dim0", I(0)}, {"dim1", I(1)}}, {}, "backward");
  std::string gw = b.op("grad.w", "matmul", {gyt, x}, {}, {}, "backward");
  std::string upd = b.op("sgd.update", "mul_scalar", {gw}, {}, {Sf(0.1)}, "optimizer");
  std::string nw = b.op("sgd.new", "sub", {w, upd}, {}, {}, "optimizer");
  b.assign("fc.weight.assign", w, nw);
  b.output("loss.out", loss);
  return b.job;
}

TEST(GraphPasses, GradientAccumulationOfFourPieces) {
  Job job = train_job("Accumulate", 4);
  run_passes(job);
  InferStats stats;
  infer_job(job, stats);
  const OpConf& x = *find_op(job, "x");
  EXPECT_EQ(x.attrs().at("pieces").i(), 4);
  EXPECT_EQ(x.output_descs(0).shape(0), 2);  // 8 / 4

  // The optimizer reads the mean gradient: mul_scalar(acc(grad.w), 1/4).
  const OpConf& upd = *find_op(job, "sgd.update");
  const OpConf* mean = nullptr;
  for (const OpConf& op : job.ops())
    if (!op.outputs().empty() && op.outputs(0) == upd.inputs(0)) mean = &op;
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->op_type(), "mul_scalar");
  EXPECT_DOUBLE_EQ(mean->scalars(0).f(), 0.25);
  const OpConf* acc = nullptr;
  for (const OpConf& op : job.ops())
    if (!op.outputs().empty() && op.outputs(0) == mean->inputs(0)) acc = &op;
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->op_type(), "acc");
  EXPECT_EQ(acc->attrs().at("repeat").i(), 4);
  EXPECT_EQ(acc->inputs(0), "grad.w/out0");

  // The loss output gets the mean loss; the assign still reads the optimizer's value and the variable.
  const OpConf& out = *find_op(job, "loss.out");
  EXPECT_NE(out.inputs(0), "loss/out0");
  EXPECT_EQ(find_op(job, "fc.weight.assign")->inputs(1), "sgd.new/out0");
  EXPECT_EQ(find_op(job, "sgd.new")->inputs(0), "fc.weight/out0");  // a variable is read as it is
  EXPECT_EQ(count_ops(job, "repeat"), 0);

  // Compiled: the forward and backward act per piece, the optimizer and the assign once.
  plan::Plan p = compile(job, {.rank = 0, .register_count = 2});
  EXPECT_EQ(p.pieces(), 4);
  auto task = [&](const std::string& name) -> const plan::Task& {
    for (const plan::Task& t : p.tasks())
      if (t.name() == name) return t;
    throw std::runtime_error("no task " + name);
  };
  EXPECT_EQ(task("fc.linear").acts_per_iteration(), 4);
  EXPECT_EQ(task("grad.w").acts_per_iteration(), 4);
  EXPECT_EQ(task("sgd.update").acts_per_iteration(), 1);
  EXPECT_EQ(task("fc.weight.assign").acts_per_iteration(), 1);
  EXPECT_EQ(task(acc->name()).kind(), plan::TASK_ACC);
  EXPECT_EQ(task(acc->name()).repeat(), 4);
  int input_regsts = 0;
  for (const plan::Regst& r : p.regsts())
    if (r.kind() == plan::REGST_INPUT) {
      ++input_regsts;
      EXPECT_EQ(r.piece_stride_bytes(), 2 * 4 * 4);
      EXPECT_EQ(r.desc().shape(0), 2);
    }
  EXPECT_EQ(input_regsts, 1);
  EXPECT_EQ(p.inputs(0).shape(0), 8);  // the launch binds the whole batch
}

TEST(GraphPasses, GradientAccumulationRefusesAnIndivisibleBatch) {
  Job job = train_job("AccumulateBadBatch", 3, 8);
  try {
    run_passes(job);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("[x]"), std::string::npos) << e.what();
  }
}

TEST(GraphPasses, AutoTickSourceSinkAndWriteAfterRead) {
  JobBuilder b("Ticks");
  b.job.mutable_conf()->add_disabled_passes("fuse_elementwise");  // the ticks of each op, by name
  std::string x = b.input("x", {4, 4});
  std::string w = b.variable("w", {4, 4});
  std::string y = b.op("y", "mul_scalar", {w}, {}, {Sf(2.0)});  // reads only a variable
  std::string z = b.op("z", "add", {y, x});
  b.output("out", z);
  std::string wt = b.op("wt", "transpose", {w}, {{"dim0", I(0)}, {"dim1", I(1)}});
  std::string r = b.op("r", "relu", {wt});  // reads w through a view
  b.output("out2", r);
  std::string nw = b.op("nw", "mul_scalar", {w}, {}, {Sf(0.5)}, "optimizer");
  b.assign("w.assign", w, nw);
  run_passes(b.job);
  const Job& job = b.job;
  const OpConf* source = nullptr;
  const OpConf* sink = nullptr;
  for (const OpConf& op : job.ops())
    if (op.op_type() == "tick") {
      if (op.attrs().at("kind").s() == "source") source = &op;
      if (op.attrs().at("kind").s() == "sink") sink = &op;
    }
  ASSERT_NE(source, nullptr);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(has_ctrl(*find_op(job, "y"), source->name()));
  EXPECT_TRUE(has_ctrl(*find_op(job, "wt"), source->name()));
  EXPECT_TRUE(has_ctrl(*find_op(job, "nw"), source->name()));
  EXPECT_FALSE(has_ctrl(*find_op(job, "z"), source->name()));  // it has a produced input
  for (const char* leaf : {"out", "out2", "w.assign"}) EXPECT_TRUE(has_ctrl(*sink, leaf)) << leaf;
  EXPECT_EQ(sink->ctrl_inputs_size(), 3);
  const OpConf& assign = *find_op(job, "w.assign");
  for (const char* reader : {"y", "wt", "r"}) EXPECT_TRUE(has_ctrl(assign, reader)) << reader;
  EXPECT_FALSE(has_ctrl(assign, "nw"));  // already before the assign
}

TEST(GraphPasses, AutoTickRoutesPerPieceReadersThroughAnAccTick) {
  JobBuilder b("TicksPieces", 2);
  std::string x = b.input("x", {4, 4});  // two pieces of [2, 4]
  std::string w = b.variable("w", {2, 4});
  std::string y = b.op("y", "mul", {w, x});  // a per-piece reader of w
  b.output("out", y);
  std::string nw = b.op("nw", "mul_scalar", {w}, {}, {Sf(0.5)}, "optimizer");
  b.assign("w.assign", w, nw);
  run_passes(b.job);
  const Job& job = b.job;
  const OpConf& assign = *find_op(job, "w.assign");
  EXPECT_FALSE(has_ctrl(assign, "y"));
  const OpConf* acc = nullptr;
  for (const std::string& c : assign.ctrl_inputs())
    if (find_op(job, c)->op_type() == "acc") acc = find_op(job, c);
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->attrs().at("repeat").i(), 2);
  ASSERT_EQ(acc->ctrl_inputs_size(), 1);
  const OpConf& join = *find_op(job, acc->ctrl_inputs(0));
  EXPECT_EQ(join.op_type(), "tick");
  EXPECT_EQ(join.attrs().at("kind").s(), "join");
  EXPECT_TRUE(has_ctrl(join, "y"));
  // nw (once, reads only a variable) starts from the acc of the source tick, not the source itself.
  const OpConf& nw_op = *find_op(job, "nw");
  ASSERT_EQ(nw_op.ctrl_inputs_size(), 1);
  const OpConf& once_tick = *find_op(job, nw_op.ctrl_inputs(0));
  EXPECT_EQ(once_tick.op_type(), "acc");
  EXPECT_EQ(find_op(job, once_tick.ctrl_inputs(0))->attrs().at("kind").s(), "source");
  InferStats stats;
  infer_job(b.job, stats);
  plan::Plan p = compile(b.job);  // parts are consistent: nothing mixed
  EXPECT_EQ(p.pieces(), 2);
}

TEST(GraphPasses, AssignsThatSwapTwoVariablesAreACycle) {
  JobBuilder b("Swap");
  std::string a = b.variable("a", {2});
  std::string c = b.variable("c", {2});
  b.assign("a.assign", a, c);  // a <- c reads c, which c.assign writes, and the other way round
  b.assign("c.assign", c, a);
  try {
    run_passes(b.job);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("[a.assign]") != std::string::npos || msg.find("[c.assign]") != std::string::npos) << msg;
  }
}

// Two chains: {add, relu, mul_scalar} (the add's value is also read outside, the relu's only inside) and
// {add, relu} after a matmul. The neg before the matmul cannot grow into a chain with that add, which also reads
// the matmul, made after the neg; but only that chain reads it, so it joins it there (a feeder).
Job chains_job() {
  JobBuilder b("Fuse");
  std::string x = b.input("x", {8, 16});
  std::string bias = b.variable("bias", {16});
  std::string w = b.variable("w", {16, 16});
  std::string h = b.op("h", "add", {x, bias});
  std::string r = b.op("r", "relu", {h});
  std::string m = b.op("m", "mul_scalar", {r}, {}, {Sf(2.0)});
  std::string t = b.op("t", "neg", {x});
  std::string v = b.op("v", "matmul", {x, w});
  std::string late = b.op("late", "add", {t, v});
  std::string q = b.op("q", "relu", {late});
  b.output("o1", m);
  b.output("o2", h);
  b.output("o3", q);
  return b.job;
}

TEST(GraphPasses, FuseElementwiseMakesChainsInTopologicalOrder) {
  Job job = chains_job();
  InferStats stats;
  infer_job(job, stats);
  fuse_elementwise(job);
  EXPECT_EQ(count_ops(job, std::string(fused::kOpName)), 2);
  EXPECT_EQ(count_ops(job, "relu"), 0);
  EXPECT_EQ(count_ops(job, "neg"), 0);
  EXPECT_EQ(count_ops(job, "matmul"), 1);
  const OpConf* first = find_op(job, "h-fused");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(std::vector<std::string>(first->inputs().begin(), first->inputs().end()),
            (std::vector<std::string>{"x/out0", "bias/out0"}));
  ASSERT_EQ(first->outputs_size(), 2);  // h (read by o2) and m (read by o1); r lives only in the tiles
  EXPECT_EQ(find_op(job, "o2")->inputs(0), first->outputs(0));
  EXPECT_EQ(find_op(job, "o1")->inputs(0), first->outputs(1));
  const fused::Program p = fused::decode(first->attrs().at("program").s());
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[1].op->name, "relu");
  EXPECT_EQ(p.outputs, (std::vector<int32_t>{0, 2}));
  const OpConf* second = find_op(job, "late-fused");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(std::vector<std::string>(second->inputs().begin(), second->inputs().end()),
            (std::vector<std::string>{"x/out0", "v/out0"}));  // the neg reads x inside the chain
  EXPECT_EQ(fused::decode(second->attrs().at("program").s()).steps[0].op->name, "neg");
  EXPECT_EQ(find_op(job, "o3")->inputs(0), second->outputs(0));
  infer_job(job, stats);  // still a valid job, with the same descs
  EXPECT_EQ(find_op(job, "h-fused")->output_descs(1).shape_size(), 2);
  // Turned off in the conf, run_passes leaves every op.
  Job off = chains_job();
  off.mutable_conf()->add_disabled_passes("fuse_elementwise");
  run_passes(off);
  EXPECT_EQ(count_ops(off, std::string(fused::kOpName)), 0);
  EXPECT_EQ(count_ops(off, "relu"), 2);
  // On (the default), run_passes infers a job it was given without descs and fuses it.
  Job on = chains_job();
  run_passes(on);
  EXPECT_EQ(count_ops(on, std::string(fused::kOpName)), 2);
}

// A clone of a computed value (a cast to its own dtype, as autograd makes for .grad) is removed, twice over;
// casts that convert, read a variable or a strided view stay.
TEST(GraphPasses, RedundantCastEliminationReadsTheInputItself) {
  JobBuilder b("Casts");
  std::string x = b.input("x", {4, 6});
  std::string w = b.variable("w", {4, 6});
  std::string y = b.op("y", "mul", {x, w});
  std::string c1 = b.op("c1", "cast", {y}, {{"dtype", Dt("float32")}});
  std::string c2 = b.op("c2", "cast", {c1}, {{"dtype", Dt("float32")}});
  std::string wide = b.op("wide", "cast", {y}, {{"dtype", Dt("float64")}});
  std::string cw = b.op("cw", "cast", {w}, {{"dtype", Dt("float32")}});
  std::string t = b.op("t", "transpose", {y}, {{"dim0", I(0)}, {"dim1", I(1)}});
  std::string ct = b.op("ct", "cast", {t}, {{"dtype", Dt("float32")}});
  b.output("o1", c2);
  b.output("o2", wide);
  b.output("o3", cw);
  b.output("o4", ct);
  b.job.mutable_ops(b.job.ops_size() - 1)->add_ctrl_inputs("c1");
  InferStats stats;
  infer_job(b.job, stats);
  redundant_cast_elimination(b.job);
  EXPECT_EQ(find_op(b.job, "c1"), nullptr);
  EXPECT_EQ(find_op(b.job, "c2"), nullptr);
  EXPECT_EQ(find_op(b.job, "o1")->inputs(0), y);
  EXPECT_NE(find_op(b.job, "wide"), nullptr);
  EXPECT_NE(find_op(b.job, "cw"), nullptr);
  EXPECT_NE(find_op(b.job, "ct"), nullptr);
  EXPECT_EQ(find_op(b.job, "o4")->ctrl_inputs(0), "y");
  infer_job(b.job, stats);  // still a valid job
}

// An SGD step: y = linear(x, w) and a stand-in gradient read w before the update; the update's new w and step
// are assigned. late_reader: another reader of w after the update in the job's order.
Job sgd_job(bool late_reader, bool value_read_twice) {
  JobBuilder b("InPlace");
  b.job.mutable_conf()->set_train(true);
  std::string x = b.input("x", {2, 4});
  std::string w = b.variable("w", {3, 4});
  std::string step = b.variable("step", {}, false);
  std::string lr = b.variable("lr", {}, false);
  std::string y = b.op("y", "linear", {x, w});
  std::string gw = b.op("gw", "mul_scalar", {w}, {}, {Sf(2.0)}, "backward");
  OpConf& upd = b.add("upd", "_sgd_update", {w, gw, step, lr},
                      {{"momentum", F(0)}, {"dampening", F(0)}, {"nesterov", B(false)}, {"weight_decay", F(0)},
                       {"maximize", B(false)}},
                      {}, "optimizer", 2);
  const std::string new_w = upd.outputs(0), new_step = upd.outputs(1);
  if (late_reader) b.output("late.out", b.op("late", "neg", {w}, {}, {}, "optimizer"));
  if (value_read_twice) b.output("w.out", new_w);
  b.assign("w.assign", w, new_w);
  b.assign("step.assign", step, new_step);
  b.output("o", y);
  InferStats stats;
  infer_job(b.job, stats);
  return b.job;
}

bool marked_in_place(const Job& job, const std::string& assign) {
  const OpConf& a = *find_op(job, assign);
  return a.attrs().count("in_place") && a.attrs().at("in_place").b();
}

TEST(GraphPasses, WriteInPlaceUpdatesVariablesAfterTheirReadersAndWritesOutputs) {
  Job job = sgd_job(false, false);
  write_in_place(job);
  EXPECT_TRUE(marked_in_place(job, "w.assign"));
  EXPECT_TRUE(marked_in_place(job, "step.assign"));
  const OpConf& upd = *find_op(job, "upd");
  EXPECT_TRUE(has_ctrl(upd, "y"));   // w's other readers act before the update writes it
  EXPECT_TRUE(has_ctrl(upd, "gw"));
  EXPECT_TRUE(has_ctrl(*find_op(job, "w.assign"), "upd"));
  Job full = sgd_job(false, false);  // through every pass: the compiler writes w in the update's task
  run_passes(full);
  InferStats stats;
  infer_job(full, stats);
  const plan::Plan p = compile(full);
  int copies = 0;
  const plan::Task* update = nullptr;
  for (const plan::Task& t : p.tasks()) {
    copies += t.kind() == plan::TASK_COPY;
    if (t.name() == "upd") update = &t;
  }
  EXPECT_EQ(copies, 0);  // the linear writes the output o in place too
  for (const plan::Regst& r : p.regsts())
    if (r.kind() == plan::REGST_OUTPUT) {
      EXPECT_EQ(r.lbn(), "y/out0");
    }
  ASSERT_NE(update, nullptr);
  int variables_written = 0;
  for (int64_t id : update->out_regsts())
    for (const plan::Regst& r : p.regsts())
      if (r.id() == id) variables_written += r.kind() == plan::REGST_VARIABLE;
  EXPECT_EQ(variables_written, 2);
  // Not in place: a reader of w after the update, or the new w read by another op too.
  Job late = sgd_job(true, false);
  write_in_place(late);
  EXPECT_FALSE(marked_in_place(late, "w.assign"));
  EXPECT_TRUE(marked_in_place(late, "step.assign"));
  Job twice = sgd_job(false, true);
  write_in_place(twice);
  EXPECT_FALSE(marked_in_place(twice, "w.assign"));
  EXPECT_FALSE(marked_in_place(twice, "w.out"));  // read by the assign too
  EXPECT_TRUE(marked_in_place(twice, "o"));
}

TEST(GraphPasses, WriteInPlaceLeavesTheGraphTheJobWouldBuild) {
  for (bool late : {false, true}) {
    Job job = sgd_job(late, false);
    std::optional<OpGraph> kept;
    write_in_place(job, kept);
    ASSERT_TRUE(kept.has_value());
    const OpGraph fresh(job);
    ASSERT_EQ(kept->size(), fresh.size());
    int ctrl_edges = 0;
    for (int i = 0; i < fresh.size(); ++i) {
      const auto same = [](std::span<const int> a, std::span<const int> b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
      };
      EXPECT_TRUE(same(kept->predecessors(i), fresh.predecessors(i))) << job.ops(i).name();
      EXPECT_TRUE(same(kept->ctrl_consumers(i), fresh.ctrl_consumers(i))) << job.ops(i).name();
      EXPECT_TRUE(same(kept->data_consumers(i), fresh.data_consumers(i))) << job.ops(i).name();
      ctrl_edges += static_cast<int>(fresh.ctrl_consumers(i).size());
    }
    EXPECT_GE(ctrl_edges, 3);  // the update after y and gw, the assigns after the update
    auto_tick(job, kept);      // takes the graph and leaves none
    EXPECT_FALSE(kept.has_value());
  }
}

TEST(GraphPasses, PassOrderIsFixedAndRecorded) {
  const std::vector<std::string> expected = {"place_ops", "dead_op_elimination", "common_subexpression_elimination",
                                             "ssp", "gradient_accumulation", "redundant_cast_elimination",
                                             "fuse_activation", "fuse_bias_gradient", "fuse_elementwise",
                                             "sbp_signatures",
                                             "sbp_lowering", "write_in_place", "fuse_optimizer", "auto_tick"};
  EXPECT_EQ(pass_order(), expected);
  Job job = train_job("Order", 1);
  job.mutable_conf()->clear_disabled_passes();
  run_passes(job);
  EXPECT_EQ(std::vector<std::string>(job.conf().pass_order().begin(), job.conf().pass_order().end()), expected);
  EXPECT_THROW(run_passes(job), Error);  // once
  InferStats stats;
  infer_job(job, stats);
  const std::string text = job_str(job);
  EXPECT_NE(text.find("passes: place_ops, dead_op_elimination, common_subexpression_elimination, ssp, "
                      "gradient_accumulation, redundant_cast_elimination, fuse_activation, fuse_bias_gradient, "
                      "fuse_elementwise, "
                      "sbp_signatures, sbp_lowering, write_in_place, fuse_optimizer, auto_tick"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fc.linear = linear(x/out0, fc.weight/out0)"), std::string::npos) << text;
  EXPECT_NE(text.find("fc.linear/out0: float32[8, 3]"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), job.ops_size() + 2);  // a header, the passes, the ops
}

}  // namespace
}  // namespace rill::graph
