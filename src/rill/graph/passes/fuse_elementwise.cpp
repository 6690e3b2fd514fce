// fuse_elementwise: chains of elementwise ops of one shape become one _fused_elementwise op (ops/fused.h), which
// runs the chain tile by tile: one task instead of one per op, and the values inside the chain never reach memory.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rill/graph/attrs.h"
#include "rill/graph/infer.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/ops/fused.h"

namespace rill::graph {
namespace {

// Note [Which elementwise ops fuse]
// An op joins a chain when it is an elementwise schema op (OpFlags::elementwise, not random) with one output
// and no control inputs, and one of its inputs comes from a chain of the same output shape, scope and part of
// the iteration (Note [Pieces and the once part]). The fused op takes the place of the chain's first op, so
// every input from outside the chain must be made before that op: an op whose other inputs are made later
// starts a chain of its own instead. That keeps the job in topological order and makes no cycle (nothing the
// chain reads can depend on the chain). A chain only one later chain reads then joins that one (absorb_feeders).
// A chain's value is an output of the fused op when an op outside it reads it; the others live only in the
// kernel's tiles. A softmax (log_softmax, or their backward ops) joins as a row step (Note [Row steps] in
// ops/fused.cpp) when it reduces along a dim other than 0 and reads dense inputs of its own shape.

bool fusible(const OpGraph& g, int i) {
  const OpConf& op = g.op(i);
  if (is_graph_only(op.op_type())) return false;
  const OpSchema* s = ops::find(op.op_type());
  if (s == nullptr || op.outputs_size() != 1 || op.output_descs_size() != 1 || op.inputs_size() < 1 ||
      op.inputs_size() > fused::kMaxStepInputs || op.ctrl_inputs_size() != 0)
    return false;
  if (s->flags.elementwise) return !s->flags.random;
  if (!fused::is_row_step(*s)) return false;
  const plan::TensorDesc& out = op.output_descs(0);
  auto dim = op.attrs().find("dim");
  if (dim == op.attrs().end() || out.shape_size() < 2) return false;
  const int64_t d = dim->second.i() < 0 ? dim->second.i() + out.shape_size() : dim->second.i();
  if (d < 1 || d >= out.shape_size()) return false;
  for (int k = 0; k < op.inputs_size(); ++k) {
    const BlobRef p = g.input_producer(i, k);
    if (p.op < 0 || p.out >= g.op(p.op).output_descs_size()) return false;
    const plan::TensorDesc& in = g.op(p.op).output_descs(p.out);
    if (!is_row_major(in) || in.shape_size() != out.shape_size()) return false;
    for (int a = 0; a < out.shape_size(); ++a)
      if (in.shape(a) != out.shape(a)) return false;
  }
  return true;
}

bool same_shape(const plan::TensorDesc& a, const plan::TensorDesc& b) {
  if (a.shape_size() != b.shape_size()) return false;
  for (int k = 0; k < a.shape_size(); ++k)
    if (a.shape(k) != b.shape(k)) return false;
  return true;
}

// A chain runs where its ops do: in a global job, only ops of one placement fuse (place_ops, in sbp.cpp).
bool same_placement(const OpConf& a, const OpConf& b) {
  return placement_ranks(a.placement()) == placement_ranks(b.placement());
}

struct Chain {
  int first = 0;
  std::vector<int> members;
};

// A chain all of whose values only one later chain reads, and whose inputs are all made before that chain's
// first op, joins it (0.5 * x * f(x): the 0.5 * x made first feeds only the chain of f's ops, which it could not
// join as it grew, since that chain started after it). The fused op stays where the reading chain starts (its
// inputs and the feeder's are all made by then); later chains first, so feeders of feeders join too.
void absorb_feeders(const OpGraph& g, const std::vector<Part>& parts, std::vector<int>& chain_of,
                    std::vector<Chain>& chains) {
  for (int a = static_cast<int>(chains.size()) - 1; a >= 0; --a) {
    Chain& feeder = chains[a];
    if (feeder.members.empty()) continue;
    int reader = -1;
    bool one = true;
    for (int m : feeder.members) {
      if (!g.ctrl_consumers(m).empty()) one = false;
      for (int c : g.data_consumers(m)) {
        const int cc = chain_of[c];
        if (cc == a) continue;
        if (cc < 0 || (reader >= 0 && cc != reader)) one = false;
        reader = cc;
      }
    }
    if (!one || reader < 0) continue;
    Chain& into = chains[reader];
    const OpConf& head = g.op(into.first);
    const OpConf& fhead = g.op(feeder.first);
    if (!same_shape(head.output_descs(0), fhead.output_descs(0)) || head.scope() != fhead.scope() ||
        !same_placement(head, fhead) || parts[into.first] != parts[feeder.first] ||
        feeder.members.size() + into.members.size() > static_cast<size_t>(fused::kMaxSteps))
      continue;
    bool before = true;
    for (int m : feeder.members)
      for (int k = 0; k < g.op(m).inputs_size(); ++k) {
        const BlobRef q = g.input_producer(m, k);
        if (q.op >= 0 && chain_of[q.op] != a && q.op >= into.first) before = false;
      }
    if (!before) continue;
    for (int m : feeder.members) chain_of[m] = reader;
    into.members.insert(into.members.end(), feeder.members.begin(), feeder.members.end());
    std::sort(into.members.begin(), into.members.end());  // steps in job order; the op stays at into.first
    feeder.members.clear();
  }
}

}  // namespace

void fuse_elementwise(Job& job) {
  // The chains are found from the output descs: the trace's, unless gradient_accumulation split the inputs
  // (the traced descs are then the whole batch's) or the job was not traced.
  bool stale = job_pieces(job) > 1;
  for (const OpConf& op : job.ops()) stale |= op.output_descs_size() != op.outputs_size();
  if (stale) {
    InferStats stats;
    infer_job(job, stats);
  }
  const OpGraph g(job);
  const std::vector<Part> parts = op_parts(g);
  const int n = g.size();
  std::vector<int> chain_of(n, -1);
  std::vector<Chain> chains;
  for (int i = 0; i < n; ++i) {
    const OpConf& op = g.op(i);
    if (!fusible(g, i)) continue;
    int joined = -1;
    for (int k = 0; k < op.inputs_size(); ++k) {
      const BlobRef p = g.input_producer(i, k);
      if (p.op < 0 || chain_of[p.op] < 0) continue;
      const int c = chain_of[p.op];
      const Chain& chain = chains[c];
      const OpConf& head = g.op(chain.first);
      if (!same_shape(head.output_descs(0), op.output_descs(0)) || head.scope() != op.scope() ||
          !same_placement(head, op) || parts[chain.first] != parts[i] ||
          static_cast<int>(chain.members.size()) >= fused::kMaxSteps)
        continue;
      bool before = true;
      for (int other = 0; other < op.inputs_size(); ++other) {
        const BlobRef q = g.input_producer(i, other);
        if (q.op >= 0 && chain_of[q.op] != c && q.op >= chain.first) before = false;
      }
      if (before) {
        joined = c;
        break;
      }
    }
    if (joined < 0) {
      joined = static_cast<int>(chains.size());
      chains.push_back(Chain{i, {}});
    }
    chains[joined].members.push_back(i);
    chain_of[i] = joined;
  }
  absorb_feeders(g, parts, chain_of, chains);

  std::unordered_set<std::string> made_names;
  auto fresh = [&](const std::string& base) {  // base, or base-2, ...: a name no op has (no NameSet of every name)
    std::string name = base;
    for (int k = 2; g.find(name) >= 0 || made_names.count(name); ++k) name = base + "-" + std::to_string(k);
    made_names.insert(name);
    return name;
  };
  std::unordered_map<std::string, std::string> lbn_to, name_to;
  std::vector<bool> keep(n, true);
  std::vector<bool> renamed_inputs(n, false);  // ops reading a fused op's member: only they are redirected
  std::vector<OpConf> made;  // the fused ops, placed after the loop (the graph views the job's strings)
  std::vector<int> place;
  for (const Chain& chain : chains) {
    if (chain.members.size() < 2) continue;  // (absorbed chains are empty)
    const OpConf& head = g.op(chain.first);
    OpConf f;
    f.set_name(fresh(head.name() + "-fused"));
    f.set_op_type(std::string(fused::kOpName));
    f.set_scope(head.scope());
    *f.mutable_placement() = head.placement();
    f.set_loc(head.loc());
    fused::Program program;
    std::unordered_map<std::string, fused::Ref> value;  // lbn -> where the program finds it
    for (int m : chain.members) {
      const OpConf& op = g.op(m);
      const OpSchema& schema = *schema_of(op);
      fused::Step step;
      step.op = &schema;
      for (const std::string& lbn : op.inputs()) {
        auto [it, fresh] = value.try_emplace(lbn, fused::Ref{false, program.num_inputs});
        if (fresh) {
          f.add_inputs(lbn);
          ++program.num_inputs;
        }
        step.inputs.push_back(it->second);
      }
      step.attrs = attrs_from_proto(schema, op.attrs());
      for (const plan::ScalarValue& s : op.scalars()) step.scalars.push_back(scalar_from_proto(s));
      const int32_t j = static_cast<int32_t>(program.steps.size());
      value[op.outputs(0)] = fused::Ref{true, j};
      program.steps.push_back(std::move(step));
      bool read_outside = !g.ctrl_consumers(m).empty();
      for (int c : g.data_consumers(m)) read_outside |= chain_of[c] != chain_of[m];
      if (read_outside || (m == chain.members.back() && program.outputs.empty())) {
        const std::string out = f.name() + "/out" + std::to_string(program.outputs.size());
        lbn_to[op.outputs(0)] = out;
        f.add_outputs(out);
        *f.add_output_descs() = op.output_descs(0);
        program.outputs.push_back(j);
      }
      name_to[op.name()] = f.name();
      keep[m] = false;
      for (int c : g.data_consumers(m)) renamed_inputs[c] = true;
      for (int c : g.ctrl_consumers(m)) renamed_inputs[c] = true;
    }
    plan::AttrValue text;
    text.set_s(fused::encode(program));
    (*f.mutable_attrs())["program"] = std::move(text);
    keep[chain.first] = true;  // becomes the fused op
    made.push_back(std::move(f));
    place.push_back(chain.first);
  }
  if (made.empty()) return;
  for (size_t k = 0; k < made.size(); ++k) {
    *job.mutable_ops(place[k]) = std::move(made[k]);
    renamed_inputs[place[k]] = true;  // it may read a member of another chain
  }
  for (int i = 0; i < n; ++i)
    if (renamed_inputs[i]) redirect(*job.mutable_ops(i), lbn_to, name_to);
  remove_ops(job, keep);
}

}  // namespace rill::graph
