// gradient_accumulation: N micro-batches per iteration (Note [Pieces and the once part] in op_graph.cpp). Input
// ops give one piece of dim 0 each; a piece value the once part reads is summed over the pieces (acc) and
// divided by N, so the optimizer sees the mean gradient and an output the mean loss; a once value the pieces
// read is repeated to each of them.
#include <unordered_map>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

// The parts the ops are to run in (before the acc and repeat ops that make them so exist).
std::vector<Part> planned_parts(const OpGraph& g) {
  std::vector<Part> parts(g.size(), Part::kPiece);
  for (int i = 0; i < g.size(); ++i) {
    const OpConf& op = g.op(i);
    if (op.op_type() == kVariable) {
      parts[i] = Part::kBinding;
    } else if (op.op_type() == kInput) {
      parts[i] = Part::kPiece;
    } else if (once_by_role(g, i)) {
      parts[i] = Part::kOnce;
    } else {
      bool piece = false, once = false;
      for (int p : g.predecessors(i)) {
        piece |= parts[p] == Part::kPiece;
        once |= parts[p] == Part::kOnce;
      }
      parts[i] = piece || !once ? Part::kPiece : Part::kOnce;
    }
  }
  return parts;
}

void split_input(OpConf& input, int64_t n) {
  auto it = input.attrs().find("shape");
  RILL_CHECK(it != input.attrs().end() && it->second.value_case() == plan::AttrValue::kInts, Runtime, "[",
             input.name(), "] the input op needs an ints attr 'shape'", at(input));
  const auto& shape = it->second.ints().v();
  RILL_CHECK(!shape.empty() && shape[0] % n == 0, Value, "[", input.name(), "] an input of batch size ",
             shape.empty() ? 0 : shape[0], " cannot be split into gradient_accumulation_steps = ", n,
             " micro-batches; make the batch size a multiple of ", n, at(input));
  (*input.mutable_attrs())["pieces"].set_i(n);
}

// The ops the pass adds, one per value (or ctrl producer) and kind, shared by its consumers.
class Boundaries {
 public:
  Boundaries(Job& job, const OpGraph& g, int64_t n) : job_(job), names_(g), n_(n) {}

  // The mean over the pieces of lbn (produced by producer): acc, then mul_scalar by 1/N.
  std::string mean(const std::string& lbn, const OpConf& producer) {
    auto [it, fresh] = mean_.emplace(lbn, std::string());
    if (!fresh) return it->second;
    OpConf* acc = added(producer.name() + "-acc", kAcc, producer, 1);
    acc->add_inputs(lbn);
    OpConf* scale = added(producer.name() + "-mean", "mul_scalar", producer, 1);
    scale->add_inputs(acc->outputs(0));
    scale->add_scalars()->set_f(1.0 / static_cast<double>(n_));
    return it->second = scale->outputs(0);
  }
  // lbn (produced once per iteration by producer) handed to each piece.
  std::string repeated(const std::string& lbn, const OpConf& producer) {
    auto [it, fresh] = repeat_.emplace(lbn, std::string());
    if (!fresh) return it->second;
    OpConf* rep = added(producer.name() + "-repeat", kRepeat, producer, 1);
    rep->add_inputs(lbn);
    return it->second = rep->outputs(0);
  }
  // A ctrl edge across the parts: an acc (piece -> once) or repeat (once -> piece) of the producer's ctrl.
  std::string ctrl(const OpConf& producer, std::string_view kind) {
    auto [it, fresh] = ctrl_.emplace(producer.name() + "#" + std::string(kind), std::string());
    if (!fresh) return it->second;
    OpConf* op = added(producer.name() + "-" + std::string(kind), kind, producer, 0);
    op->add_ctrl_inputs(producer.name());
    return it->second = op->name();
  }

 private:
  OpConf* added(const std::string& base, std::string_view type, const OpConf& like, int outputs) {
    OpConf* op = add_op(job_, names_.fresh(base), type, like.scope(), outputs);
    op->set_loc(like.loc());
    if (type == kAcc || type == kRepeat) (*op->mutable_attrs())["repeat"].set_i(n_);
    return op;
  }
  Job& job_;
  NameSet names_;
  int64_t n_;
  std::unordered_map<std::string, std::string> mean_, repeat_, ctrl_;
};

}  // namespace

void gradient_accumulation(Job& job) {
  const int64_t n = job.conf().gradient_accumulation_steps();
  if (n <= 1) return;
  // Edges are found first and rewritten by index; the added ops go after the original ones (whose addresses
  // adding does not move: a repeated message field holds its elements by pointer).
  const int original = job.ops_size();
  const OpGraph g(job);
  const std::vector<Part> parts = planned_parts(g);
  std::vector<std::pair<int, int>> edges;  // (consumer, input number) to rewrite, found before ops are added
  std::vector<BlobRef> from;
  for (int i = 0; i < original; ++i) {
    const OpConf& op = job.ops(i);
    for (int k = 0; k < op.inputs_size(); ++k) {
      BlobRef p = g.input_producer(i, k);
      if (p.op < 0 || parts[p.op] == Part::kBinding || parts[p.op] == parts[i]) continue;
      edges.emplace_back(i, k);
      from.push_back(p);
    }
  }
  std::vector<std::vector<int>> ctrl_from(original);  // ctrl producers across the parts, per consumer
  for (int i = 0; i < original; ++i)
    for (const std::string& c : job.ops(i).ctrl_inputs()) {
      int p = g.find(c);
      if (p >= 0 && parts[p] != Part::kBinding && parts[p] != parts[i]) ctrl_from[i].push_back(p);
    }
  Boundaries added(job, g, n);
  for (size_t e = 0; e < edges.size(); ++e) {
    const auto [i, k] = edges[e];
    const OpConf& producer = job.ops(from[e].op);
    const std::string lbn = job.ops(i).inputs(k);
    std::string fresh = parts[i] == Part::kOnce ? added.mean(lbn, producer) : added.repeated(lbn, producer);
    job.mutable_ops(i)->set_inputs(k, fresh);
  }
  for (int i = 0; i < original; ++i)
    for (int p : ctrl_from[i]) {
      OpConf& op = *job.mutable_ops(i);
      const std::string kind(parts[i] == Part::kOnce ? kAcc : kRepeat);
      const OpConf& producer = job.ops(p);
      std::string fresh = added.ctrl(producer, kind);
      for (std::string& c : *op.mutable_ctrl_inputs())
        if (c == producer.name()) c = fresh;
    }
  for (int i = 0; i < original; ++i)
    if (job.ops(i).op_type() == kInput) split_input(*job.mutable_ops(i), n);
  sort_topologically(job);
}

}  // namespace rill::graph
