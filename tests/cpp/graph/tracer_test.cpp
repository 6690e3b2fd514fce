// graph/tracer.cpp: eager ops issued between start() and finish() become a job (Note [Tracing memory]).
#include <gtest/gtest.h>

#include <algorithm>

#include "rill/autograd/engine.h"
#include "rill/autograd/node.h"
#include "rill/eager/functional.h"
#include "rill/eager/math.h"
#include "rill/graph/tracer.h"

namespace rill::graph {
namespace {

const bool installed = (autograd::install(), true);

std::vector<std::string> op_types(const Job& job) {
  std::vector<std::string> out;
  for (const OpConf& c : job.ops()) out.push_back(c.op_type());
  return out;
}

const OpConf& find_op(const Job& job, const std::string& type, int nth = 0) {
  for (const OpConf& c : job.ops())
    if (c.op_type() == type && nth-- == 0) return c;
  ADD_FAILURE() << "no op " << type;
  return job.ops(0);
}

TEST(GraphTracer, OpsBecomeOpConfsAndEagerMemoryVariables) {
  ASSERT_TRUE(installed);
  Tensor x = eager::full({2, 3}, Scalar(1.0), DType::kFloat32);
  Tensor w = eager::full({2, 3}, Scalar(2.0), DType::kFloat32);
  Tracer t("job");
  t.name_variable(w, "w");
  t.add_input(x);
  t.start();
  Tensor y = eager::mul(x, w);
  EXPECT_FALSE(y.storage()->allocated());  // traced: no memory, no instruction
  Tensor z = eager::transpose(y, 0, 1);
  t.add_output(z);
  const ArenaJob traced = t.finish(false, 1);
  const Job& job = *traced;
  EXPECT_EQ(op_types(job), (std::vector<std::string>{"input", "variable", "mul",
                                                     "transpose", "output"}));
  const OpConf& mul = find_op(job, "mul");
  EXPECT_EQ(mul.inputs(0), "input-0/out0");
  EXPECT_EQ(mul.inputs(1), "w/out0");
  EXPECT_EQ(find_op(job, "transpose").inputs(0), mul.outputs(0));
  EXPECT_EQ(find_op(job, "transpose").attrs().at("dim1").i(), 1);
  ASSERT_EQ(t.variables().size(), 1u);
  EXPECT_TRUE(t.variables()[0].is_same(w));
  // After the trace, a traced tensor refuses to be read.
  EXPECT_NE(y.storage()->poison(), nullptr);
}

TEST(GraphTracer, AWriteIntoAVariableIsAnAssignAndLaterReadsSeeTheNewValue) {
  Tensor p = eager::full({4}, Scalar(1.0), DType::kFloat32);
  Tracer t("job");
  t.start();
  Tensor v = eager::view(p, {2, 2});  // a view made before the write
  eager::inplace(eager::op("add"), std::vector<Tensor>{p, eager::full({4}, Scalar(1.0), DType::kFloat32)});
  Tensor r = eager::mul(v, v);  // reads the view of the written memory: the view is made again
  t.add_output(r);
  const ArenaJob traced = t.finish(true, 1);
  const Job& job = *traced;
  const OpConf& add = find_op(job, "add");
  const OpConf& second_view = find_op(job, "view", 1);
  EXPECT_EQ(second_view.inputs(0), add.outputs(0));
  EXPECT_EQ(find_op(job, "mul").inputs(0), second_view.outputs(0));
  const OpConf& assign = find_op(job, "assign");
  EXPECT_EQ(assign.inputs(0), find_op(job, "variable").outputs(0));
  EXPECT_EQ(assign.inputs(1), add.outputs(0));
}

TEST(GraphTracer, EmptyMemoryFilledInsideTheTraceIsTheTracesOwn) {
  Tracer t("job");
  t.start();
  Tensor z = eager::full({3}, Scalar(0.0), DType::kFloat32);
  t.add_output(eager::add(z, z));
  const ArenaJob traced = t.finish(false, 1);
  const Job& job = *traced;
  EXPECT_EQ(op_types(job), (std::vector<std::string>{"fill", "add", "output"}));
  EXPECT_TRUE(t.variables().empty());
}

TEST(GraphTracer, ADetachedTensorIsReadThroughItsMemory) {
  Tensor x = eager::full({2, 3}, Scalar(1.0), DType::kFloat32);
  Tracer t("job");
  t.add_input(x);
  t.start();
  Tensor y = eager::mul(x, x);
  Tensor d = y.view_as_meta(y.meta(), y.offset());  // what detach() makes: the same memory, no op
  Tensor s = eager::select(y, 0, 1);
  Tensor raw = s.view_as_meta(s.meta(), s.offset());
  t.add_output(eager::add(d, d));
  t.add_output(eager::add(raw, raw));
  const ArenaJob traced = t.finish(false, 1);
  const Job& job = *traced;
  EXPECT_EQ(find_op(job, "add", 0).inputs(0), find_op(job, "mul").outputs(0));
  const OpConf& restride = find_op(job, "restride");
  EXPECT_EQ(restride.attrs().at("offset").i(), 3);
  EXPECT_EQ(find_op(job, "add", 1).inputs(0), restride.outputs(0));
}

TEST(GraphTracer, BackwardIsTracedWithTheEagerRules) {
  Tensor x = eager::full({3}, Scalar(2.0), DType::kFloat32);
  x.impl()->set_requires_grad(true);
  Tracer t("job");
  t.start();
  Tensor loss = eager::sum(eager::mul(x, x), {}, false);
  Tensor outs[1] = {loss};
  autograd::backward(outs, {}, false);
  AutogradMeta* m = autograd::find_meta(x);
  ASSERT_NE(m, nullptr);
  Tensor g = m->grad;
  ASSERT_TRUE(g.defined());
  t.add_output(g);
  const ArenaJob traced = t.finish(true, 1);
  const Job& job = *traced;
  std::vector<std::string> types = op_types(job);
  EXPECT_GE(std::count(types.begin(), types.end(), "mul"), 2);  // forward, and the rule's grad * x
  EXPECT_EQ(types.back(), "output");
}

TEST(GraphTracer, AWriteIntoPartOfATensorIsItsValueThenARestrideScatter) {
  Tensor x = eager::full({2, 3}, Scalar(1.0), DType::kFloat32);
  Tracer t("job");
  t.add_input(x);
  t.start();
  Tensor y = eager::mul(x, x);
  Tensor column = eager::select(y, 1, 2);
  eager::fill_(column, Scalar(0.0));
  Tensor z = eager::add(column, eager::select(y, 1, 0));  // reads the column and y after the write
  t.add_output(y);
  t.add_output(z);
  const ArenaJob traced = t.finish(false, 1);
  const Job& job = *traced;
  const OpConf& fill = find_op(job, "fill");
  EXPECT_EQ(fill.output_descs(0).strides(0), 1);  // the part's value is dense
  const OpConf& scatter = find_op(job, "restride_scatter");
  EXPECT_EQ(scatter.inputs(0), find_op(job, "mul").outputs(0));
  EXPECT_EQ(scatter.inputs(1), fill.outputs(0));
  EXPECT_EQ(scatter.attrs().at("size").ints().v(0), 2);
  EXPECT_EQ(scatter.attrs().at("stride").ints().v(0), 3);
  EXPECT_EQ(scatter.attrs().at("offset").i(), 2);
  // Later reads see the whole's new blob: y's output, and the column made again from it.
  EXPECT_EQ(find_op(job, "output", 0).inputs(0), scatter.outputs(0));
  EXPECT_EQ(find_op(job, "select", 1).inputs(0), scatter.outputs(0));
}

TEST(GraphTracer, WritesItCannotExpressAndSyncsAreRefused) {
  Tensor x = eager::full({2, 3}, Scalar(1.0), DType::kFloat32);
  Tracer t("job");
  t.add_input(x);
  t.start();
  EXPECT_THROW(eager::fill_(x, Scalar(0.0)), Error);  // into an input
  Tensor y = eager::mul(x, x);
  EXPECT_THROW(t.on_sync(y, "item()"), Error);
  t.on_sync(x, "item()");  // an input has a value: allowed
  EXPECT_THROW(eager::wait_readable(y), Error);
  t.stop();
}

}  // namespace
}  // namespace rill::graph
