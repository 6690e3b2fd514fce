// graph/passes/sbp.cpp: SBP signatures chosen per op, boxing inserted, the job lowered to one rank's shapes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job_builder.h"
#include "rill/graph/attrs.h"
#include "rill/graph/infer.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using namespace testing;

// A global job (its global inputs on ranks [0, 1], group 0), lowered as rank `rank` sees it.
void place(JobBuilder& b, int rank) {
  b.job.mutable_conf()->set_global(true);
  b.job.mutable_conf()->set_rank(rank);
  InferStats stats;
  infer_job(b.job, stats);  // the traced (logical) descs
}

// The passes of a global job that this file tests: placements and signatures, then the lowering.
void lower(Job& job) {
  place_ops(job);
  sbp_signatures(job);
  sbp_lowering(job);
}

std::string global_input(JobBuilder& b, const std::string& name, std::vector<int64_t> shape, const char* sbp) {
  std::string lbn = b.input(name, std::move(shape));
  OpConf& op = *b.job.mutable_ops(b.job.ops_size() - 1);
  (*op.mutable_attrs())["sbp"] = S(sbp);
  set_placement_ranks(*op.mutable_placement(), {0, 1});
  return lbn;
}

plan::AttrValue None() {
  plan::AttrValue v;
  v.set_none(true);
  return v;
}

std::vector<int64_t> shape_of(const OpConf& op, int k = 0) {
  return std::vector<int64_t>(op.output_descs(k).shape().begin(), op.output_descs(k).shape().end());
}

std::vector<std::string> sbps(const google::protobuf::RepeatedPtrField<std::string>& s) {
  return std::vector<std::string>(s.begin(), s.end());
}

const OpConf* producer_of(const Job& job, const std::string& lbn) {
  for (const OpConf& op : job.ops())
    for (const std::string& out : op.outputs())
      if (out == lbn) return &op;
  return nullptr;
}

TEST(GraphSbp, DataParallelSplitsTheBatchAndReducesWhatIsPartial) {
  JobBuilder b("DataParallel");
  std::string x = global_input(b, "x", {8, 4}, "S(0)");
  std::string w = b.variable("w", {3, 4});
  std::string y = b.op("y", "linear", {x, w});
  std::string total = b.op("total", "sum", {y}, {{"dim", None()}, {"keepdim", B(false)}, {"dtype", None()}});
  b.output("out", total);
  std::string xt = b.op("xt", "transpose", {x}, {{"dim0", I(0)}, {"dim1", I(1)}});
  std::string grad = b.op("grad", "matmul", {xt, y});  // [4, 3]: rows of x times rows of y, summed: P
  std::string gt = b.op("gt", "t", {grad});
  b.output("out_grad", gt);
  place(b, 0);
  lower(b.job);

  const OpConf& lin = *find_op(b.job, "y");
  EXPECT_EQ(sbps(lin.in_sbps()), (std::vector<std::string>{"S(0)", "B"}));
  EXPECT_EQ(sbps(lin.out_sbps()), std::vector<std::string>{"S(0)"});
  EXPECT_EQ(shape_of(*find_op(b.job, "x")), (std::vector<int64_t>{4, 4}));  // this rank's rows
  EXPECT_EQ(shape_of(lin), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(sbps(find_op(b.job, "total")->out_sbps()), std::vector<std::string>{"P"});
  EXPECT_EQ(sbps(find_op(b.job, "xt")->out_sbps()), std::vector<std::string>{"S(1)"});
  EXPECT_EQ(sbps(find_op(b.job, "grad")->out_sbps()), std::vector<std::string>{"P"});
  EXPECT_EQ(sbps(find_op(b.job, "gt")->out_sbps()), std::vector<std::string>{"P"});
  // Each partial output is all-reduced before it leaves the graph, broadcast.
  EXPECT_EQ(count_ops(b.job, "_boxing_all_reduce"), 2);
  const OpConf* reduced = producer_of(b.job, find_op(b.job, "out")->inputs(0));
  ASSERT_NE(reduced, nullptr);
  EXPECT_EQ(reduced->op_type(), "_boxing_all_reduce");
  EXPECT_EQ(reduced->inputs(0), total);
  EXPECT_EQ(std::vector<std::string>(b.job.conf().output_sbps().begin(), b.job.conf().output_sbps().end()),
            (std::vector<std::string>{"B", "B"}));
  // The collectives are chained in the job's order: every rank calls them in one order.
  const OpConf* second = producer_of(b.job, find_op(b.job, "out_grad")->inputs(0));
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->ctrl_inputs_size(), 1);
  EXPECT_EQ(second->ctrl_inputs(0), reduced->name());
}

TEST(GraphSbp, ABroadcastValueIsSlicedForASplitConsumerOnEachRank) {
  for (int rank : {0, 1}) {
    JobBuilder b("Slice");
    std::string x = global_input(b, "x", {6, 4}, "S(0)");
    std::string bias = b.variable("bias", {6, 4});
    std::string y = b.op("y", "add", {x, bias});  // x's split is free; bias is sliced, no collective
    b.output("out", y);
    place(b, rank);
    lower(b.job);
    EXPECT_EQ(sbps(find_op(b.job, "y")->in_sbps()), (std::vector<std::string>{"S(0)", "S(0)"}));
    const OpConf* slice = producer_of(b.job, find_op(b.job, "y")->inputs(1));
    ASSERT_NE(slice, nullptr);
    EXPECT_EQ(slice->op_type(), "slice");
    EXPECT_EQ(slice->attrs().at("start").i(), 3 * rank);
    EXPECT_EQ(slice->attrs().at("end").i(), 3 * rank + 3);
    EXPECT_EQ(shape_of(*slice), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(b.job.conf().output_sbps(0), "S(0)");  // a split output stays split
  }
}

TEST(GraphSbp, AViewOfASplitTensorGetsItsLocalSize) {
  JobBuilder b("View");
  std::string x = global_input(b, "x", {8, 4}, "S(0)");
  std::string v = b.op("v", "view", {x}, {{"size", Ints({8, 2, 2})}});
  b.output("out", v);
  place(b, 1);
  lower(b.job);
  const OpConf& view = *find_op(b.job, "v");
  EXPECT_EQ(sbps(view.out_sbps()), std::vector<std::string>{"S(0)"});
  EXPECT_EQ(std::vector<int64_t>(view.attrs().at("size").ints().v().begin(), view.attrs().at("size").ints().v().end()),
            (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(shape_of(view), (std::vector<int64_t>{4, 2, 2}));
}

// A 2 x 3 mesh of ranks 0..5 (Note [Meshes] in core/sbp.h): dim 0's lines {0,3} {1,4} {2,5} have groups 10, 11,
// 12; dim 1's lines {0,1,2} {3,4,5} have groups 20, 21.
void on_mesh(OpConf& op) {
  set_placement(*op.mutable_placement(), {0, 1, 2, 3, 4, 5}, 7, {2, 3}, {10, 11, 12, 20, 21});
}

TEST(GraphSbp, OnAMeshEachDimIsBoxedInItsLines) {
  for (int rank : {0, 4}) {
    JobBuilder b("Mesh");
    std::string x = b.input("x", {12, 6});
    OpConf& in = *b.job.mutable_ops(b.job.ops_size() - 1);
    (*in.mutable_attrs())["sbp"] = S("S(0),S(1)");
    on_mesh(in);
    std::string v = b.op("v", "view", {x}, {{"size", Ints({12, 6, 1})}});  // S(0) x S(1): sizes halved, thirded
    std::string whole = b.op("whole", "relu", {v});
    b.output("out", whole);
    place(b, rank);
    sbp_signatures(b.job);
    EXPECT_EQ(sbps(find_op(b.job, "v")->out_sbps()), std::vector<std::string>{"S(0),S(1)"});
    sbp_lowering(b.job);
    EXPECT_EQ(shape_of(*find_op(b.job, "x")), (std::vector<int64_t>{6, 2}));
    const auto& size = find_op(b.job, "v")->attrs().at("size").ints().v();
    EXPECT_EQ(std::vector<int64_t>(size.begin(), size.end()), (std::vector<int64_t>{6, 2, 1}));
    EXPECT_EQ(count_ops(b.job, "_boxing_all_gather"), 0);
  }
  for (int rank : {0, 4}) {  // S(0),S(1) -> B,B: dim 1 gathered in this rank's row, then dim 0 in its column
    JobBuilder b("MeshGather");
    std::string x = b.input("x", {12, 6});
    OpConf& in = *b.job.mutable_ops(b.job.ops_size() - 1);
    (*in.mutable_attrs())["sbp"] = S("S(0),S(1)");
    on_mesh(in);
    OpConf& d = b.add("d", "dropout", {x}, {{"p", F(0.5)}}, {Si(0), Si(0)}, "forward", 2);  // the whole tensor
    b.output("out", d.outputs(0));
    place(b, rank);
    lower(b.job);
    EXPECT_EQ(sbps(find_op(b.job, "d")->in_sbps()), std::vector<std::string>{"B,B"});
    const OpConf* rows = producer_of(b.job, find_op(b.job, "d")->inputs(0));
    ASSERT_NE(rows, nullptr);
    EXPECT_EQ(rows->op_type(), "_boxing_all_gather");
    EXPECT_EQ(rows->attrs().at("dim").i(), 0);
    EXPECT_EQ(rows->attrs().at("world").i(), 2);
    EXPECT_EQ(rows->attrs().at("group").i(), rank == 0 ? 10 : 11);  // the column of rank 0 / rank 4
    const OpConf* cols = producer_of(b.job, rows->inputs(0));
    ASSERT_NE(cols, nullptr);
    EXPECT_EQ(cols->op_type(), "_boxing_all_gather");
    EXPECT_EQ(cols->attrs().at("dim").i(), 1);
    EXPECT_EQ(cols->attrs().at("world").i(), 3);
    EXPECT_EQ(cols->attrs().at("group").i(), rank == 0 ? 20 : 21);  // the row
    EXPECT_EQ(shape_of(*cols), (std::vector<int64_t>{6, 6}));
    EXPECT_EQ(shape_of(*rows), (std::vector<int64_t>{12, 6}));
  }
}

TEST(GraphSbp, RandomOpsRunOnTheWholeTensor) {
  JobBuilder b("Dropout");
  std::string x = global_input(b, "x", {8, 4}, "S(0)");
  OpConf& d = b.add("d", "dropout", {x}, {{"p", F(0.5)}}, {Si(0), Si(0)}, "forward", 2);
  b.output("out", d.outputs(0));
  place(b, 0);
  lower(b.job);
  EXPECT_EQ(sbps(find_op(b.job, "d")->in_sbps()), std::vector<std::string>{"B"});
  EXPECT_EQ(producer_of(b.job, find_op(b.job, "d")->inputs(0))->op_type(), "_boxing_all_gather");
}

TEST(GraphSbp, AnUnevenSplitIsRefused) {
  JobBuilder b("Uneven");
  std::string x = global_input(b, "x", {3, 4}, "S(0)");
  b.output("out", b.op("y", "relu", {x}));
  place(b, 0);
  EXPECT_THROW(lower(b.job), Error);
}

TEST(GraphSbp, AJobOfOneProcessIsLeftAsItIs) {
  JobBuilder b("Local");
  std::string x = b.input("x", {3, 4});
  b.output("out", b.op("y", "relu", {x}));
  InferStats stats;
  infer_job(b.job, stats);
  const std::string before = b.job.SerializeAsString();
  lower(b.job);
  EXPECT_EQ(b.job.SerializeAsString(), before);
}

TEST(GraphSbp, LayerNormAndEmbeddingSplitTheirRowsAndSumTheirTablesGradients) {
  JobBuilder b("Rows");
  std::string x = global_input(b, "x", {8, 6}, "S(0)");
  std::string w = b.variable("w", {6});
  OpConf& ln = b.add("ln", "layer_norm", {x, w}, {{"axis", I(1)}, {"eps", F(1e-5)}}, {}, "forward", 3);
  OpConf& lnb = b.add("lnb", "layer_norm_backward", {ln.outputs(0), x, ln.outputs(1), ln.outputs(2), w},
                      {{"axis", I(1)}}, {}, "forward", 3);
  b.output("y", lnb.outputs(0));
  b.output("dw", lnb.outputs(1));
  std::string idx = global_input(b, "idx", {4, 3}, "S(0)");
  b.job.mutable_ops(b.job.ops_size() - 1)->mutable_attrs()->at("dtype") = S("int64");
  std::string table = b.variable("table", {10, 5});
  std::string e = b.op("e", "embedding", {table, idx}, {{"padding_idx", I(-1)}});
  std::string eb = b.op("eb", "embedding_backward", {e, idx}, {{"num_weights", I(10)}, {"padding_idx", I(-1)}});
  b.output("dtable", eb);
  place(b, 0);
  lower(b.job);
  EXPECT_EQ(sbps(find_op(b.job, "ln")->out_sbps()), (std::vector<std::string>{"S(0)", "S(0)", "S(0)"}));
  EXPECT_EQ(sbps(find_op(b.job, "lnb")->out_sbps()), (std::vector<std::string>{"S(0)", "P", "P"}));
  EXPECT_EQ(shape_of(*find_op(b.job, "lnb")), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(sbps(find_op(b.job, "e")->in_sbps()), (std::vector<std::string>{"B", "S(0)"}));
  EXPECT_EQ(shape_of(*find_op(b.job, "e")), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(sbps(find_op(b.job, "eb")->out_sbps()), std::vector<std::string>{"P"});
  EXPECT_EQ(count_ops(b.job, "_boxing_all_reduce"), 2);  // dw and dtable, whole before they leave
}

// Two stages: x -> relu on rank 0 (stage 0), then neg on rank 1 (stage 1); as each rank lowers it.
Job two_stages(int rank) {
  JobBuilder b("Stages");
  std::string x = b.input("x", {4, 2});
  (*b.job.mutable_ops(0)->mutable_attrs())["sbp"] = S("B");
  set_placement_ranks(*b.job.mutable_ops(0)->mutable_placement(), {0});
  std::string h = b.op("h", "relu", {x});
  std::string y = b.op("y", "neg", {h});
  b.output("out", y);
  b.job.mutable_ops(1)->set_stage(1);  // stage 0
  b.job.mutable_ops(2)->set_stage(2);  // stage 1
  b.job.mutable_conf()->set_global(true);
  b.job.mutable_conf()->set_rank(rank);
  for (int64_t r : {0, 1}) {
    Placement& p = *b.job.mutable_conf()->add_stages();
    p.add_ranks(r);
    p.set_group(r + 1);
  }
  InferStats stats;
  infer_job(b.job, stats);
  lower(b.job);
  return std::move(b.job);
}

TEST(GraphSbp, StagesKeepTheirRanksOpsAndSendWhatCrosses) {
  Job first = two_stages(0), second = two_stages(1);
  EXPECT_NE(find_op(first, "h"), nullptr);
  EXPECT_EQ(find_op(first, "y"), nullptr);
  EXPECT_EQ(find_op(first, "out"), nullptr);
  ASSERT_EQ(count_ops(first, "_boxing_send"), 1);
  EXPECT_EQ(find_op(second, "h"), nullptr);
  EXPECT_EQ(find_op(second, "x"), nullptr);  // the input is stage 0's
  ASSERT_EQ(count_ops(second, "_boxing_recv"), 1);
  const OpConf* send = nullptr;
  const OpConf* recv = nullptr;
  for (const OpConf& op : first.ops())
    if (op.op_type() == "_boxing_send") send = &op;
  for (const OpConf& op : second.ops())
    if (op.op_type() == "_boxing_recv") recv = &op;
  EXPECT_EQ(send->inputs(0), "h/out0");
  EXPECT_EQ(send->attrs().at("dst").i(), 1);
  EXPECT_EQ(recv->attrs().at("src").i(), 0);
  EXPECT_EQ(send->attrs().at("tag").i(), recv->attrs().at("tag").i());
  EXPECT_EQ(find_op(second, "y")->inputs(0), recv->outputs(0));
  EXPECT_EQ(shape_of(*recv), (std::vector<int64_t>{4, 2}));
  // The output is the last stage's: rank 1 binds it, rank 0 none; rank 0 binds the input.
  EXPECT_EQ(std::vector<int32_t>(second.conf().bound_outputs().begin(), second.conf().bound_outputs().end()),
            std::vector<int32_t>{0});
  EXPECT_EQ(first.conf().bound_outputs_size(), 0);
  EXPECT_EQ(std::vector<int32_t>(first.conf().bound_inputs().begin(), first.conf().bound_inputs().end()),
            std::vector<int32_t>{0});
  EXPECT_EQ(second.conf().bound_inputs_size(), 0);
  // Stage 0 of 2 keeps two pieces in flight, stage 1 one.
  EXPECT_EQ(first.conf().piece_buffers(), 2);
  EXPECT_EQ(second.conf().piece_buffers(), 1);
}

}  // namespace
}  // namespace rill::graph
