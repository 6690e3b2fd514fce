// graph/infer: logical inference over jobs (chains, views, the cache on repeated blocks, errors) and the job
// IR's serialisation.
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include "job_builder.h"
#include "rill/graph/infer.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using namespace testing;

std::vector<int64_t> shape_of(const plan::TensorDesc& d) { return {d.shape().begin(), d.shape().end()}; }
std::vector<int64_t> strides_of(const plan::TensorDesc& d) { return {d.strides().begin(), d.strides().end()}; }

TEST(GraphInfer, Chain) {
  JobBuilder b("InferChain");
  std::string x = b.input("x", {4, 3});
  std::string w = b.variable("fc.weight", {5, 3});
  std::string bias = b.variable("fc.bias", {5});
  std::string y = b.op("fc.linear", "linear", {x, w, bias});
  std::string r = b.op("relu", "relu", {y});
  b.output("out", r);
  InferStats stats;
  infer_job(b.job, stats);
  const plan::TensorDesc& d = find_op(b.job, "relu")->output_descs(0);
  EXPECT_EQ(shape_of(d), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(strides_of(d), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(d.dtype(), "float32");
  EXPECT_EQ(shape_of(find_op(b.job, "x")->output_descs(0)), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(find_op(b.job, "out")->output_descs_size(), 0);  // an output op lists no outputs
  EXPECT_EQ(stats.computed + stats.hits, b.job.ops_size());
}

TEST(GraphInfer, ViewOffsetsAccumulate) {
  JobBuilder b("InferViews");
  std::string w = b.variable("w", {4, 6});
  std::string t = b.op("t", "transpose", {w}, {{"dim0", I(0)}, {"dim1", I(1)}});
  std::string n = b.op("n", "narrow", {t}, {{"dim", I(0)}, {"start", I(2)}, {"length", I(3)}});
  std::string s = b.op("s", "select", {n}, {{"dim", I(1)}, {"index", I(1)}});
  InferStats stats;
  infer_job(b.job, stats);
  const plan::TensorDesc& dt = find_op(b.job, "t")->output_descs(0);
  EXPECT_EQ(shape_of(dt), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(strides_of(dt), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(dt.offset(), 0);
  EXPECT_EQ(find_op(b.job, "n")->output_descs(0).offset(), 2);  // rows 2.. of the transpose: columns of w
  const plan::TensorDesc& ds = find_op(b.job, "s")->output_descs(0);
  EXPECT_EQ(shape_of(ds), (std::vector<int64_t>{3}));
  EXPECT_EQ(ds.offset(), 2 + 6);  // then row 1 of w
}

// 48 blocks of linear -> relu -> add, each with its own names and variables.
Job blocks_job(const std::string& name, int blocks) {
  JobBuilder b(name);
  std::string h = b.input("x", {8, 16});
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    std::string w = b.variable(p + "weight", {16, 16});
    std::string bias = b.variable(p + "bias", {16});
    std::string y = b.op(p + "linear", "linear", {h, w, bias});
    std::string r = b.op(p + "relu", "relu", {y});
    h = b.op(p + "add", "add", {r, h});
  }
  b.output("out", h);
  return b.job;
}

TEST(GraphInfer, CacheInfersEachDistinctBlockOnce) {
  constexpr int kBlocks = 48, kOpsPerBlock = 5;
  Job job = blocks_job("CacheBlocks", kBlocks);  // a job name of its own: a cold cache for its conf
  const int64_t entries = infer_cache_size();
  InferStats stats;
  infer_job(job, stats);
  EXPECT_EQ(stats.computed + stats.hits, job.ops_size());
  EXPECT_GE(stats.computed, kOpsPerBlock);                // one block's ops at least (new key)
  EXPECT_LE(stats.computed, 2 * kOpsPerBlock + 2);        // at most two blocks and the input and output
  EXPECT_GE(stats.hits, (kBlocks - 2) * kOpsPerBlock);
  EXPECT_EQ(infer_cache_size() - entries, stats.computed);
  const plan::TensorDesc& last = find_op(job, "layers.47.add")->output_descs(0);
  EXPECT_EQ(shape_of(last), (std::vector<int64_t>{8, 16}));

  InferStats again;  // the same job once more: all hits
  infer_job(job, again);
  EXPECT_EQ(again.computed, 0);
  EXPECT_EQ(again.hits, job.ops_size());
}

TEST(GraphInfer, ErrorNamesTheOpAndItsLine) {
  JobBuilder b("InferError");
  std::string x = b.input("x", {4, 3});
  std::string w = b.variable("fc.weight", {5, 7});
  b.op("model.fc.linear-1", "linear", {x, w});
  InferStats stats;
  try {
    infer_job(b.job, stats);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[model.fc.linear-1]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.py:3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot be multiplied"), std::string::npos) << msg;
  }
}

TEST(GraphInfer, InputOfAnotherDtypeThanTheOpComputesInIsAnError) {
  JobBuilder b("InferCast");
  std::string x = b.input("x", {4});
  std::string i = b.input("i", {4}, "int64");
  b.op("sum", "add", {x, i});
  InferStats stats;
  try {
    infer_job(b.job, stats);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[sum] input 1 has dtype int64"), std::string::npos) << e.what();
  }
}

TEST(GraphInfer, BadJobsAreErrors) {
  JobBuilder unknown("InferUnknown");
  unknown.op("mystery", "no_such_op", {});
  InferStats stats;
  EXPECT_THROW(infer_job(unknown.job, stats), Error);

  JobBuilder dangling("InferDangling");
  dangling.op("r", "relu", {"nowhere/out0"});
  EXPECT_THROW(infer_job(dangling.job, stats), Error);

  JobBuilder bad_assign("InferAssign");
  std::string w = bad_assign.variable("w", {2, 3});
  std::string v = bad_assign.input("v", {3, 2});
  bad_assign.assign("set", w, v);
  EXPECT_THROW(infer_job(bad_assign.job, stats), Error);  // shapes differ
}

TEST(GraphJob, RoundTripsThroughItsSerialisation) {
  Job job = blocks_job("RoundTrip", 3);
  run_passes(job);
  InferStats stats;
  infer_job(job, stats);
  std::string bytes;
  ASSERT_TRUE(job.SerializeToString(&bytes));
  Job back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(job, back));
  EXPECT_EQ(back.conf().pass_order_size(), static_cast<int>(pass_order().size()));
  EXPECT_EQ(back.ops_size(), job.ops_size());
}

}  // namespace
}  // namespace rill::graph
