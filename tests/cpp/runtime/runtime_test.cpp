// runtime/: plans built by hand, run by the actor runtime, checked against eager.
// Also built with ThreadSanitizer by scripts/tsan.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/graph/attrs.h"
#include "rill/runtime/runtime.h"
#include "rill/runtime/trace.h"
#include "rill/graph/task_id.h"
#include "rill/util/env.h"
#include "rill/util/error.h"

#include "../allocations.h"
#include "../values.h"

namespace rill::runtime {
namespace {

using test::values;

/** n float32 values from start by step, as an eager tensor of shape. */
Tensor ramp(const Shape& shape, double start, double step) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor i = eager::arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}), DType::kFloat32);
  Tensor x = eager::binary_scalar(eager::op("mul_scalar"), i, Scalar(step));
  return eager::reshape(eager::binary_scalar(eager::op("add_scalar"), x, Scalar(start)), shape);
}

Tensor unary(const char* op, const Tensor& x) { return eager::unary(eager::op(op), x); }
Tensor binary(const char* op, const Tensor& a, const Tensor& b) { return eager::binary(eager::op(op), a, b); }

/** Builds a plan one register and one task at a time; producers and consumers follow from the tasks. */
class PlanBuilder {
 public:
  plan::Plan p;

  explicit PlanBuilder(int pieces = 1) { p.set_pieces(pieces); }

  int64_t variable(const Shape& shape, DType dtype = DType::kFloat32) {
    plan::Variable& v = *p.add_variables();
    v.set_name("v" + std::to_string(p.variables_size()));
    *v.mutable_desc() = graph::desc_to_proto(*make_contiguous_meta(shape, dtype));
    return add(plan::REGST_VARIABLE, shape, dtype, 1, p.variables_size() - 1);
  }
  int64_t input(const Shape& shape, DType dtype = DType::kFloat32, int64_t piece_stride_bytes = 0) {
    *p.add_inputs() = graph::desc_to_proto(*make_contiguous_meta(shape, dtype));
    int64_t id = add(plan::REGST_INPUT, shape, dtype, 1, p.inputs_size() - 1);
    regst(id).set_piece_stride_bytes(piece_stride_bytes);
    return id;
  }
  int64_t output(const Shape& shape, DType dtype = DType::kFloat32) {
    *p.add_outputs() = graph::desc_to_proto(*make_contiguous_meta(shape, dtype));
    return add(plan::REGST_OUTPUT, shape, dtype, 1, p.outputs_size() - 1);
  }
  /** A register written by the assign (copy) task into variable binding. */
  int64_t assigned(int32_t binding) {
    const plan::TensorDesc& d = p.variables(binding).desc();
    int64_t id = add(plan::REGST_VARIABLE, Shape(d.shape().begin(), d.shape().end()), DType::kFloat32, 1, binding);
    return id;
  }
  /** An owned register of count buffers, in a mem block of its own chunk. */
  int64_t owned(const Shape& shape, int count = 1, DType dtype = DType::kFloat32) {
    int64_t id = add(plan::REGST_OWNED, shape, dtype, count, 0);
    int64_t bytes = make_contiguous_meta(shape, dtype)->numel * dtype_itemsize(dtype);
    plan::Chunk& c = *p.add_chunks();
    c.set_id(id);
    c.set_size(bytes * count + 64);
    plan::MemBlock& b = *p.add_mem_blocks();
    b.set_id(id);
    b.set_chunk_id(id);
    b.set_offset(64);  // not at the chunk's start, so that the block offset counts
    b.set_size(bytes * count);
    regst(id).set_mem_block_id(id);
    return id;
  }
  int64_t ctrl(int count = 1) { return add(plan::REGST_CTRL, {}, DType::kFloat32, count, 0); }
  int64_t view(int64_t alias, const Shape& shape, const Strides& strides, int64_t offset = 0) {
    int64_t id = add(plan::REGST_VIEW, shape, DType::kFloat32, 1, 0);
    *regst(id).mutable_desc() = graph::desc_to_proto(*make_meta(shape, strides, DType::kFloat32), offset);
    regst(id).set_alias_of(alias);
    return id;
  }

  plan::Task& task(plan::TaskKind kind, const std::string& name, const std::vector<int64_t>& ins,
                   const std::vector<int64_t>& outs, int acts = 1, int64_t stream = 0) {
    plan::Task& t = *p.add_tasks();
    t.set_id(graph::encode_task_id({.stream = stream, .index = ++tasks_}));
    t.set_kind(kind);
    t.set_name(name);
    t.set_acts_per_iteration(acts);
    t.set_loc("model.py:" + std::to_string(10 + tasks_));
    for (int64_t r : ins) {
      t.add_in_regsts(r);
      bool listed = false;
      for (int64_t c : regst(r).consumers()) listed |= c == t.id();
      if (!listed) regst(r).add_consumers(t.id());
    }
    for (int64_t r : outs) {
      t.add_out_regsts(r);
      regst(r).set_producer(t.id());
    }
    return t;
  }
  plan::Task& compute(const std::string& op, const std::string& name, const std::vector<int64_t>& ins,
                      const std::vector<int64_t>& outs, std::vector<AttrValue> attrs = {}, int acts = 1,
                      int64_t stream = 0) {
    plan::Task& t = task(plan::TASK_COMPUTE, name, ins, outs, acts, stream);
    t.set_op(op);
    graph::attrs_to_proto(eager::op(op), *make_attrs(std::move(attrs)), t.mutable_attrs());
    return t;
  }

  plan::Regst& regst(int64_t id) {
    for (plan::Regst& r : *p.mutable_regsts())
      if (r.id() == id) return r;
    throw std::runtime_error("no register " + std::to_string(id));
  }

 private:
  int64_t add(plan::RegstKind kind, const Shape& shape, DType dtype, int count, int32_t binding) {
    plan::Regst& r = *p.add_regsts();
    r.set_id(++regsts_);
    r.set_kind(kind);
    r.set_count(count);
    r.set_binding(binding);
    r.set_lbn("blob" + std::to_string(regsts_));
    if (kind != plan::REGST_CTRL) *r.mutable_desc() = graph::desc_to_proto(*make_contiguous_meta(shape, dtype));
    return r.id();
  }
  int64_t tasks_ = 0;
  int64_t regsts_ = 0;
};

/** Run rt once with these float buffers bound. */
void launch(Runtime& rt, std::vector<std::vector<float>*> vars, std::vector<std::vector<float>*> ins,
            std::vector<std::vector<float>*> outs, int64_t seed = 0, int64_t offset = 0) {
  std::vector<void*> v, i, o;
  for (auto* x : vars) v.push_back(x->data());
  for (auto* x : ins) i.push_back(x->data());
  for (auto* x : outs) o.push_back(x->data());
  rt.run(Bindings{v, i, o, seed, offset});
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

// A plan's error at construction, as text ("" when it builds).
std::string plan_error(plan::Plan p) {
  try {
    Runtime rt(std::move(p));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime) << e.what();
    return e.what();
  }
  return "";
}

TEST(RuntimeChain, VariableInputAddReluOutputMatchesEager) {
  Tensor x = ramp({2, 3}, -2.0, 0.75), y = ramp({2, 3}, 1.0, -0.5);
  std::vector<float> xv = values<float>(x), yv = values<float>(y), out(6, -1.0f);
  PlanBuilder b;
  int64_t rx = b.variable({2, 3}), ry = b.input({2, 3}), sum = b.owned({2, 3}), ro = b.output({2, 3});
  int64_t start = b.ctrl(), end = b.ctrl();
  b.task(plan::TASK_SOURCE_TICK, "source", {}, {start});
  b.compute("add", "add", {rx, ry, start}, {sum});
  b.compute("relu", "relu", {sum}, {ro, end});
  b.task(plan::TASK_SINK_TICK, "sink", {end}, {});
  Runtime rt(b.p);
  launch(rt, {&xv}, {&yv}, {&out});
  expect_near(out, values<float>(unary("relu", binary("add", x, y))));
  // Bound memory is read at each launch.
  std::vector<float> y2 = values<float>(ramp({2, 3}, 5.0, 1.0));
  launch(rt, {&xv}, {&y2}, {&out});
  expect_near(out, values<float>(unary("relu", binary("add", x, ramp({2, 3}, 5.0, 1.0)))));
}

// A plan of one piece on one thread runs in order (Note [Plans run in order]): the same values as its actors,
// no message, and once warm no heap allocation in a launch, either way.
TEST(RuntimeInOrder, RunsAsItsActorsWouldWithNoMessageAndNoAllocation) {
  Tensor x = ramp({2, 3}, -2.0, 0.75), y = ramp({2, 3}, 1.0, -0.5);
  const std::vector<float> want = values<float>(unary("exp", unary("relu", binary("add", x, y))));
  for (const char* actors : {"0", "1"}) {
    env::set_override("RILL_GRAPH_ACTORS", actors);
    std::vector<float> xv = values<float>(x), yv = values<float>(y), out(6, -1.0f);
    PlanBuilder b;
    int64_t rx = b.variable({2, 3}), ry = b.input({2, 3}), sum = b.owned({2, 3}), r = b.owned({2, 3});
    int64_t t = b.view(r, {3, 2}, {2, 1}), ro = b.output({3, 2});  // a reshape: dense, so no kernel allocates
    int64_t start = b.ctrl(), end = b.ctrl();
    b.task(plan::TASK_SOURCE_TICK, "source", {}, {start});
    b.compute("add", "add", {rx, ry, start}, {sum});
    b.compute("relu", "relu", {sum}, {r});
    b.task(plan::TASK_VIEW, "reshape", {r}, {t});
    b.compute("exp", "exp", {t}, {ro, end});
    b.task(plan::TASK_SINK_TICK, "sink", {end}, {});
    Runtime rt(b.p);
    env::set_override("RILL_GRAPH_ACTORS", std::nullopt);
    launch(rt, {&xv}, {&yv}, {&out});  // warm: the first launch may size what later ones reuse
    std::vector<void*> v{xv.data()}, i{yv.data()}, o{out.data()};
    const Bindings bindings{v, i, o, 0, 0};
    test::count_allocations(true);
    for (int k = 0; k < 5; ++k) rt.run(bindings);
    test::count_allocations(false);
    EXPECT_EQ(test::allocations(), 0) << "RILL_GRAPH_ACTORS=" << actors;
    expect_near(out, want);
    EXPECT_EQ(rt.stats().acts, 6 * 6);
    if (actors[0] == '0') EXPECT_EQ(rt.stats().messages, 0);
    else EXPECT_GT(rt.stats().messages, 0);
  }
}

TEST(RuntimeView, TransposeOfAComputedRegisterFeedsMatmul) {
  Tensor w = ramp({3, 2}, -1.0, 0.5), a = ramp({4, 2}, 0.5, 0.25);
  std::vector<float> wv = values<float>(w), av = values<float>(a), out(12);
  PlanBuilder b;
  int64_t rw = b.variable({3, 2}), ra = b.input({4, 2}), e = b.owned({3, 2});
  int64_t t = b.view(e, {2, 3}, {1, 2}), ro = b.output({4, 3});
  b.compute("exp", "exp", {rw}, {e});
  b.task(plan::TASK_VIEW, "transpose", {e}, {t});
  b.compute("matmul", "matmul", {ra, t}, {ro});
  Runtime rt(b.p);
  launch(rt, {&wv}, {&av}, {&out});
  expect_near(out, values<float>(eager::matmul(a, eager::transpose(unary("exp", w), 0, 1))));
}

TEST(RuntimeView, ViewWithAnOffsetOfAVariable) {
  // A column of a variable, one element in: a view register without a producer.
  Tensor w = ramp({3, 2}, 1.0, 1.0);
  std::vector<float> wv = values<float>(w), out(3);
  PlanBuilder b;
  int64_t rw = b.variable({3, 2}), col = b.view(rw, {3}, {2}, 1), ro = b.output({3});
  b.compute("neg", "neg", {col}, {ro});
  Runtime rt(b.p);
  launch(rt, {&wv}, {}, {&out});
  expect_near(out, values<float>(unary("neg", eager::select(w, 1, 1))));
}

// Four pieces of an input (piece_stride_bytes), each through exp on a register of count `count`, summed by an acc.
void check_pieces_acc(int count) {
  SCOPED_TRACE("count " + std::to_string(count));
  Tensor x = ramp({4, 3}, -1.0, 0.2);
  std::vector<float> xv = values<float>(x), out(3);
  PlanBuilder b(4);
  int64_t start = b.ctrl(count), rx = b.input({3}, DType::kFloat32, 3 * sizeof(float)), e = b.owned({3}, count);
  int64_t ro = b.output({3}), end = b.ctrl();
  b.task(plan::TASK_SOURCE_TICK, "source", {}, {start}, 4);
  b.compute("exp", "exp", {rx, start}, {e}, {}, 4);
  b.task(plan::TASK_ACC, "acc", {e}, {ro, end}, 1).set_repeat(4);
  b.task(plan::TASK_SINK_TICK, "sink", {end}, {});
  Runtime rt(b.p);
  launch(rt, {}, {&xv}, {&out});
  expect_near(out, values<float>(eager::reduce(eager::op("sum"), unary("exp", x), {0}, false)));
  // Per iteration: source 4, exp 4, acc 1, sink 1 acts; ready + free for 4 ticks, 4 exp pieces, 1 tick.
  RuntimeStats s = rt.stats();
  EXPECT_EQ(s.iterations, 1);
  EXPECT_EQ(s.acts, 10);
  EXPECT_EQ(s.messages, 2 * (4 + 4 + 1));
  launch(rt, {}, {&xv}, {&out});
  expect_near(out, values<float>(eager::reduce(eager::op("sum"), unary("exp", x), {0}, false)));
  EXPECT_EQ(rt.stats().iterations, 2);
  EXPECT_EQ(rt.stats().acts, 20);
  EXPECT_EQ(rt.stats().messages, 4 * (4 + 4 + 1));
}

TEST(RuntimePieces, AccSumsPiecesWithCountOne) { check_pieces_acc(1); }
TEST(RuntimePieces, AccSumsPiecesWithCountTwo) { check_pieces_acc(2); }

TEST(RuntimePieces, RepeatLendsOnePieceToEveryMicroBatch) {
  // relu(w) once per iteration, repeated to 3 pieces, each added to its input piece, the sums accumulated.
  Tensor w = ramp({2}, -0.5, 1.0), x = ramp({3, 2}, 0.0, 1.0);
  std::vector<float> wv = values<float>(w), xv = values<float>(x), out(2);
  PlanBuilder b(3);
  int64_t rw = b.variable({2}), r = b.owned({2}), rep = b.view(r, {2}, {1}), rx = b.input({2}, DType::kFloat32, 8);
  int64_t sum = b.owned({2}), ro = b.output({2});
  b.compute("relu", "relu", {rw}, {r}, {}, 1);
  b.task(plan::TASK_REPEAT, "repeat", {r}, {rep}, 1).set_repeat(3);
  b.compute("add", "add", {rep, rx}, {sum}, {}, 3);
  b.task(plan::TASK_ACC, "acc", {sum}, {ro}, 1).set_repeat(3);
  Runtime rt(b.p);
  launch(rt, {&wv}, {&xv}, {&out});
  Tensor each = binary("add", eager::expand(unary("relu", w), {3, 2}), x);
  expect_near(out, values<float>(eager::reduce(eager::op("sum"), each, {0}, false)));
}

TEST(RuntimePieces, ActsPerIterationZeroMeansPieces) {
  Tensor x = ramp({3, 2}, 1.0, 0.5);
  std::vector<float> xv = values<float>(x), out(2);
  PlanBuilder b(3);
  int64_t rx = b.input({2}, DType::kFloat32, 8), r = b.owned({2}), ro = b.output({2});
  b.compute("sqrt", "sqrt", {rx}, {r}, {}, 0);
  b.task(plan::TASK_ACC, "acc", {r}, {ro}, 1).set_repeat(3);
  Runtime rt(b.p);
  launch(rt, {}, {&xv}, {&out});
  expect_near(out, values<float>(eager::reduce(eager::op("sum"), unary("sqrt", x), {0}, false)));
  EXPECT_EQ(rt.stats().acts, 3 + 1);
}

// v += x[piece] for each of 4 pieces: the read of piece i + 1 waits for the write of piece i through a ctrl
// register it reads one piece late (Task.in_lags); its piece 0 waits for nothing.
TEST(RuntimePieces, ALaggedInputTakesTheWriteOfThePieceBefore) {
  for (int count : {1, 2, 4}) {
    SCOPED_TRACE("count " + std::to_string(count));
    Tensor v = ramp({3}, 1.0, 1.0), x = ramp({4, 3}, 0.5, 0.25);
    std::vector<float> vv = values<float>(v), xv = values<float>(x);
    PlanBuilder b(4);
    int64_t rv = b.variable({3}), rx = b.input({3}, DType::kFloat32, 3 * sizeof(float)), start = b.ctrl(count);
    int64_t sum = b.owned({3}, count), written = b.ctrl(count), assigned = b.assigned(0);
    b.task(plan::TASK_SOURCE_TICK, "source", {}, {start}, 4);
    plan::Task& read = b.compute("add", "read", {rv, rx, start, written}, {sum}, {}, 4);
    for (int32_t lag : {0, 0, 0, 1}) read.add_in_lags(lag);
    b.task(plan::TASK_COPY, "assign", {sum}, {assigned, written}, 4);
    Runtime rt(b.p);
    for (int launches = 1; launches <= 2; ++launches) {
      launch(rt, {&vv}, {&xv}, {});
      Tensor want = binary("add", v, eager::reduce(eager::op("sum"), x, {0}, false));
      if (launches == 2) want = binary("add", want, eager::reduce(eager::op("sum"), x, {0}, false));
      expect_near(vv, values<float>(want));
    }
  }
  {  // only a produced ctrl register may be read late
    PlanBuilder b(2);
    int64_t rv = b.variable({3}), r = b.owned({3}, 2), ro = b.output({3});
    b.compute("relu", "relu", {rv}, {r}, {}, 2).add_in_lags(1);
    b.task(plan::TASK_ACC, "acc", {r}, {ro}, 1).set_repeat(2);
    EXPECT_NE(plan_error(b.p).find("only a control register with a producer may be read late"), std::string::npos)
        << plan_error(b.p);
  }
}

TEST(RuntimeAssign, CopyIntoAVariableAfterItsReaders) {
  Tensor v = ramp({4}, 1.0, 1.0), x = ramp({4}, 10.0, 10.0), y = ramp({4}, -3.0, 0.5);
  std::vector<float> vv = values<float>(v), xv = values<float>(x), yv = values<float>(y), out(4);
  PlanBuilder b;
  int64_t rv = b.variable({4}), rx = b.input({4}), ry = b.input({4}), ro = b.output({4}), done = b.ctrl();
  int64_t assigned = b.assigned(0);
  // The reader runs on stream 1, the assign on stream 0: only the control edge orders them.
  b.compute("add", "read", {rv, rx}, {ro, done}, {}, 1, 1);
  b.task(plan::TASK_COPY, "assign", {ry, done}, {assigned});
  Runtime rt(b.p);
  for (int i = 0; i < 3; ++i) {
    std::vector<float> before = vv;
    launch(rt, {&vv}, {&xv, &yv}, {&out});
    std::vector<float> want(4);
    for (int k = 0; k < 4; ++k) want[k] = before[k] + xv[k];
    expect_near(out, want);
    expect_near(vv, yv);
  }
}

TEST(RuntimeRandom, EachLaunchDrawsFromItsOffset) {
  PlanBuilder b;
  int64_t ro = b.output({64});
  plan::Task& t = b.compute("rand", "rand", {}, {ro}, {Shape{64}, DType::kFloat32});
  t.set_random(true);
  *t.add_scalars() = graph::scalar_to_proto(Scalar(int64_t{0}));
  *t.add_scalars() = graph::scalar_to_proto(Scalar(int64_t{0}));
  Runtime rt(b.p);
  std::vector<float> a(64), a2(64), c(64), d(64);
  launch(rt, {}, {}, {&a}, 7, 100);
  launch(rt, {}, {}, {&a2}, 7, 100);
  launch(rt, {}, {}, {&c}, 7, 164);
  launch(rt, {}, {}, {&d}, 8, 100);
  EXPECT_EQ(a, a2);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  for (float f : a) EXPECT_TRUE(f >= 0.0f && f < 1.0f);
  // The same draw as eager's kernel at that seed and offset.
  Scalar s[2] = {Scalar(int64_t{7}), Scalar(int64_t{100})};
  Tensor e = eager::call1(eager::op("rand"), {}, s, make_attrs({Shape{64}, DType::kFloat32}));
  EXPECT_EQ(a, values<float>(e));
}

TEST(RuntimeRandom, EachPieceDrawsItsOwnNumbers) {
  // Under gradient accumulation piece k draws at offset + k * random_piece_numbers, as eager's k-th micro-batch.
  const int n = 4;
  PlanBuilder b(n);
  int64_t r = b.owned({64}), ro = b.output({64});
  plan::Task& t = b.compute("rand", "rand", {}, {r}, {Shape{64}, DType::kFloat32}, n);
  t.set_random(true);
  *t.add_scalars() = graph::scalar_to_proto(Scalar(int64_t{0}));
  *t.add_scalars() = graph::scalar_to_proto(Scalar(int64_t{16}));  // its offset in the piece's draws
  b.task(plan::TASK_ACC, "acc", {r}, {ro}, 1).set_repeat(n);
  Runtime rt(b.p);
  std::vector<float> out(64);
  std::vector<void*> o = {out.data()};
  rt.run(Bindings{{}, {}, o, 7, 100, 80});
  std::vector<float> want(64, 0.0f);
  for (int k = 0; k < n; ++k) {
    Scalar s[2] = {Scalar(int64_t{7}), Scalar(int64_t{100 + 80 * k + 16})};
    std::vector<float> piece = values<float>(eager::call1(eager::op("rand"), {}, s, make_attrs({Shape{64},
                                                                                               DType::kFloat32})));
    for (int i = 0; i < 64; ++i) want[i] += piece[i];
  }
  expect_near(out, want);
}

TEST(RuntimeStreams, PiecesCrossBetweenTwoThreadsBothWays) {
  // exp on stream 1, neg on stream 0, abs on stream 1, summed on stream 0: 16 pieces through count-1 registers.
  const int n = 16;
  Tensor x = ramp({n, 5}, -2.0, 0.05);
  std::vector<float> xv = values<float>(x), out(5);
  PlanBuilder b(n);
  int64_t rx = b.input({5}, DType::kFloat32, 5 * sizeof(float)), e = b.owned({5}), g = b.owned({5});
  int64_t r = b.owned({5}), ro = b.output({5});
  b.compute("exp", "exp", {rx}, {e}, {}, n, 1);
  b.compute("neg", "neg", {e}, {g}, {}, n, 0);
  b.compute("abs", "abs", {g}, {r}, {}, n, 1);
  b.task(plan::TASK_ACC, "acc", {r}, {ro}, 1, 0).set_repeat(n);
  Runtime rt(b.p);
  std::vector<float> want = values<float>(eager::reduce(eager::op("sum"), unary("exp", x), {0}, false));
  for (int i = 0; i < 5; ++i) {
    launch(rt, {}, {&xv}, {&out});
    expect_near(out, want);
  }
  EXPECT_EQ(rt.stats().messages, 5 * 2 * 3 * n);
}

TEST(RuntimeStreams, AViewKeepsItsPieceTakenWhileAnotherThreadReadsIt) {
  // exp and the transpose on stream 0, the view's reader on stream 1, 8 pieces through count-1 registers: exp may
  // overwrite its buffer only once the reader has freed the view of it (under TSan, a race otherwise).
  const int n = 8;
  Tensor x = ramp({n, 2, 3}, -1.0, 0.03);
  std::vector<float> xv = values<float>(x), out(6);
  PlanBuilder b(n);
  int64_t rx = b.input({2, 3}, DType::kFloat32, 6 * sizeof(float)), e = b.owned({2, 3});
  int64_t t = b.view(e, {3, 2}, {1, 3}), g = b.owned({3, 2}), ro = b.output({3, 2});
  b.compute("exp", "exp", {rx}, {e}, {}, n, 0);
  b.task(plan::TASK_VIEW, "transpose", {e}, {t}, n, 0);
  b.compute("neg", "neg", {t}, {g}, {}, n, 1);
  b.task(plan::TASK_ACC, "acc", {g}, {ro}, 1, 0).set_repeat(n);
  Runtime rt(b.p);
  Tensor each = unary("neg", eager::transpose(unary("exp", x), 1, 2));
  std::vector<float> want = values<float>(eager::reduce(eager::op("sum"), each, {0}, false));
  for (int i = 0; i < 3; ++i) {
    launch(rt, {}, {&xv}, {&out});
    expect_near(out, want);
  }
}

TEST(RuntimeErrors, KernelErrorIsRaisedFromRunAndTheNextRunWorks) {
  Tensor x = ramp({5}, 0.0, 1.5);
  std::vector<float> xv = values<float>(x), out(2), after(2);
  PlanBuilder b;
  int64_t rx = b.variable({5}), ri = b.input({2}, DType::kInt64), g = b.owned({2}), ro = b.output({2});
  b.compute("gather", "pick", {rx, ri}, {g}, {int64_t{0}});
  b.compute("exp", "exp", {g}, {ro});
  Runtime rt(b.p);
  // The kind eager gives for the same bad index.
  ErrorKind want = ErrorKind::kRuntime;
  Tensor bad = eager::arange(Scalar(int64_t{1}), Scalar(int64_t{15}), Scalar(int64_t{6}), DType::kInt64);  // 1, 7
  try {
    Tensor in[2] = {x, bad};
    values<float>(eager::call1(eager::op("gather"), in, {}, make_attrs({int64_t{0}})));
    ADD_FAILURE() << "eager gather took an out-of-range index";
  } catch (const Error& e) {
    want = e.kind();
  }
  std::vector<int64_t> idx = {1, 7};
  std::vector<void*> vars = {xv.data()}, ins = {idx.data()}, outs = {out.data()};
  try {
    rt.run(Bindings{vars, ins, outs});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.kind(), want);
    EXPECT_NE(m.find("out of bounds"), std::string::npos) << m;
    EXPECT_NE(m.find("graph task 'pick'"), std::string::npos) << m;
    EXPECT_NE(m.find("op gather"), std::string::npos) << m;
    EXPECT_NE(m.find("model.py:11"), std::string::npos) << m;
  }
  EXPECT_EQ(rt.stats().iterations, 0);
  idx = {4, 0};
  outs = {after.data()};
  rt.run(Bindings{vars, ins, outs});
  expect_near(after, {std::exp(6.0f), 1.0f});
  EXPECT_EQ(rt.stats().iterations, 1);
}

TEST(RuntimeErrors, AnErrorInOnePieceDrainsEveryStream) {
  // gather on stream 1 fails at piece 2 of 4; exp and the acc on stream 0 still pass every piece's messages.
  Tensor x = ramp({5}, 0.0, 0.5);
  std::vector<float> xv = values<float>(x), out(2);
  PlanBuilder b(4);
  int64_t rx = b.variable({5}), ri = b.input({2}, DType::kInt64, 2 * sizeof(int64_t)), g = b.owned({2});
  int64_t e = b.owned({2}), ro = b.output({2});
  b.compute("gather", "pick", {rx, ri}, {g}, {int64_t{0}}, 4, 1);
  b.compute("exp", "exp", {g}, {e}, {}, 4, 0);
  b.task(plan::TASK_ACC, "acc", {e}, {ro}, 1, 0).set_repeat(4);
  Runtime rt(b.p);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4, 9, 4, 0};
  std::vector<void*> vars = {xv.data()}, ins = {idx.data()}, outs = {out.data()};
  for (int i = 0; i < 2; ++i) {
    EXPECT_THROW(rt.run(Bindings{vars, ins, outs}), Error);
    EXPECT_EQ(rt.stats().iterations, 0);
  }
  idx[5] = 1;
  rt.run(Bindings{vars, ins, outs});
  // Element 0 sums exp at indices 0, 2, 4, 4; element 1 at 1, 3, 1, 0.
  std::vector<float> want = {std::exp(xv[0]) + std::exp(xv[2]) + std::exp(xv[4]) + std::exp(xv[4]),
                             std::exp(xv[1]) + std::exp(xv[3]) + std::exp(xv[1]) + std::exp(xv[0])};
  expect_near(out, want);
  EXPECT_EQ(rt.stats().iterations, 1);
}

TEST(RuntimePlan, ConsumedButNeverProducedIsRejected) {
  PlanBuilder b;
  int64_t orphan = b.owned({3}), ro = b.output({3});
  b.compute("relu", "relu", {orphan}, {ro});
  std::string m = plan_error(b.p);
  EXPECT_NE(m.find("is consumed by task 'relu' but never produced"), std::string::npos) << m;
}

TEST(RuntimePlan, BadPlansAreRejectedAtConstruction) {
  {
    PlanBuilder b;
    int64_t rx = b.variable({3}), ro = b.output({3});
    b.compute("relu", "f", {rx}, {ro}).set_op("no_such_op");
    EXPECT_NE(plan_error(b.p).find("unknown op 'no_such_op'"), std::string::npos);
  }
  {
    // Two ticks each waiting for the other: a cycle that can never start.
    PlanBuilder b;
    int64_t c1 = b.ctrl(), c2 = b.ctrl();
    b.task(plan::TASK_TICK, "a", {c2}, {c1});
    b.task(plan::TASK_TICK, "b", {c1}, {c2});
    std::string m = plan_error(b.p);
    EXPECT_NE(m.find("plan deadlocked"), std::string::npos) << m;
    EXPECT_NE(m.find("'a' (0/1 acts) waits for piece 0 of 'blob2'"), std::string::npos) << m;
  }
  {
    // The producer makes 4 pieces a launch, the consumer takes 2.
    PlanBuilder b(4);
    int64_t c = b.ctrl();
    b.task(plan::TASK_SOURCE_TICK, "source", {}, {c}, 4);
    b.task(plan::TASK_SINK_TICK, "sink", {c}, {}, 2);
    EXPECT_NE(plan_error(b.p).find("makes 4 pieces of 'blob1' per iteration but task 'sink' takes 2"),
              std::string::npos);
  }
  {
    // The output desc is not what add infers.
    PlanBuilder b;
    int64_t rx = b.variable({3}), ro = b.output({4});
    b.compute("add", "add", {rx, rx}, {ro});
    EXPECT_NE(plan_error(b.p).find("but op 'add' makes float32[3]"), std::string::npos) << plan_error(b.p);
  }
  {
    // Buffers that do not fit their block.
    PlanBuilder b;
    int64_t rx = b.variable({3}), r = b.owned({3});
    b.compute("relu", "relu", {rx}, {r});
    b.regst(r).set_count(2);
    EXPECT_NE(plan_error(b.p).find("do not fit in its mem block"), std::string::npos);
  }
}

TEST(RuntimePlan, BindingsAreChecked) {
  PlanBuilder b;
  int64_t rx = b.input({3}), ro = b.output({3});
  b.compute("relu", "relu", {rx}, {ro});
  Runtime rt(b.p);
  std::vector<float> x(3), out(3);
  std::vector<void*> none, ins = {x.data()}, outs = {out.data()}, null_out = {nullptr};
  EXPECT_THROW(rt.run(Bindings{none, none, outs}), Error);
  EXPECT_THROW(rt.run(Bindings{none, ins, null_out}), Error);
  rt.run(Bindings{none, ins, outs});
  EXPECT_EQ(rt.stats().iterations, 1);
  EXPECT_EQ(rt.stats().owned_bytes, 0);
}

TEST(RuntimeStats, OwnedBytesAreTheChunks) {
  PlanBuilder b;
  int64_t rx = b.variable({8}), r = b.owned({8}, 2), ro = b.output({8});
  b.compute("relu", "relu", {rx}, {r});
  b.compute("neg", "neg", {r}, {ro});
  Runtime rt(b.p);
  EXPECT_EQ(rt.stats().owned_bytes, 8 * 4 * 2 + 64);
  EXPECT_EQ(rt.stats().acts, 0);  // the construction's dry run is not counted
  EXPECT_EQ(rt.stats().messages, 0);
  EXPECT_EQ(rt.plan().tasks_size(), 2);
}

/** How many times needle occurs in text. */
int64_t occurrences(const std::string& text, const std::string& needle) {
  int64_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(RuntimeTrace, EveryKernelOfEveryPieceIsRecordedOnItsThread) {
  // exp and abs on stream 1, neg and the acc on stream 0, 4 pieces, 3 launches: each kernel run is one event.
  const int n = 4;
  Tensor x = ramp({n, 5}, -2.0, 0.05);
  std::vector<float> xv = values<float>(x), out(5);
  PlanBuilder b(n);
  int64_t rx = b.input({5}, DType::kFloat32, 5 * sizeof(float)), e = b.owned({5}), g = b.owned({5});
  int64_t r = b.owned({5}), ro = b.output({5});
  b.compute("exp", "exp", {rx}, {e}, {}, n, 1);
  b.compute("neg", "neg", {e}, {g}, {}, n, 0);
  b.compute("abs", "abs", {g}, {r}, {}, n, 1);
  b.task(plan::TASK_ACC, "acc", {r}, {ro}, 1, 0).set_repeat(n);
  Runtime untraced(b.p);
  static int runs = 0;  // the file keeps every event of the process: this run's graph has a name of its own
  std::string graph = "Pieces" + std::to_string(++runs);
  std::string path = ::testing::TempDir() + "rill_graph_trace_test.json";
  env::set_override("RILL_GRAPH_TRACE", path);
  Runtime rt(b.p, graph);
  env::set_override("RILL_GRAPH_TRACE", std::nullopt);
  int64_t before = trace::recorded();
  launch(untraced, {}, {&xv}, {&out});
  EXPECT_EQ(trace::recorded(), before);  // nothing without the variable
  for (int i = 0; i < 3; ++i) launch(rt, {}, {&xv}, {&out});
  EXPECT_EQ(trace::recorded() - before, 3 * 4 * n);
  ASSERT_EQ(trace::write(), trace::recorded());
  std::ifstream in(path);
  std::string text, line;
  int64_t thread_names = 0;
  while (std::getline(in, line)) {
    if (line.find("\"graph\": \"" + graph + "\"") != std::string::npos) text += line + "\n";
    thread_names += occurrences(line, "\"name\": \"rill-actors-1\"");
  }
  for (const char* task : {"exp", "neg", "abs", "acc"})
    EXPECT_EQ(occurrences(text, std::string("{\"name\": \"") + task + "\", \"cat\""), 3 * n) << task;
  EXPECT_EQ(occurrences(text, "\"ph\": \"X\""), 3 * 4 * n);
  EXPECT_EQ(occurrences(text, "\"iteration\": 2, \"piece\": 3}"), 4);
  EXPECT_EQ(occurrences(text, "\"cat\": \"copy\""), 0);
  EXPECT_GE(thread_names, 1);  // the stream-1 thread, named
}

}  // namespace
}  // namespace rill::runtime
