// common_subexpression_elimination: of ops computing the same thing from the same inputs, the first stays and
// the others' consumers read it.
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/symbol.h"

namespace rill::graph {
namespace {

// Only schema ops that are pure functions of their arguments: a random op draws anew at each call (two dropouts
// are two masks), a composite one writes into its input (copy_, fill_), and the graph-only ops are bindings,
// writes and ticks.
bool mergeable(const OpConf& op) {
  if (is_graph_only(op.op_type())) return false;
  const OpSchema* s = ops::find(op.op_type());
  return s != nullptr && !s->flags.random && !s->flags.composite;
}

// What two ops must share to be merged: op type, attrs, scalars, inputs, ctrl inputs (as a set), scope (a
// forward value stays a forward value for gradient_accumulation) and placement (a global job's), and the number
// of outputs.
std::string merge_key(const OpConf& op) {
  OpConf k;
  k.set_op_type(op.op_type());
  *k.mutable_attrs() = op.attrs();
  *k.mutable_scalars() = op.scalars();
  *k.mutable_inputs() = op.inputs();
  std::vector<std::string> ctrl(op.ctrl_inputs().begin(), op.ctrl_inputs().end());
  std::sort(ctrl.begin(), ctrl.end());
  for (const std::string& c : ctrl) k.add_ctrl_inputs(c);
  k.set_scope(op.scope());
  *k.mutable_placement() = op.placement();
  return deterministic_bytes(k) + "#" + std::to_string(op.outputs_size());  // outputs pair up one to one
}

// The op type and inputs, hashed: ops with equal merge keys have equal ones (Note [Merge keys on demand]).
size_t type_and_inputs_hash(const OpConf& op) {
  size_t h = std::hash<std::string>()(op.op_type());
  for (const std::string& lbn : op.inputs()) hash_combine(h, std::hash<std::string>()(lbn));
  return h;
}

// Note [Merge keys on demand]
// A merge key serializes a copy of the op: ten thousand of them for a 48-block job, where nearly every op has
// inputs no other op of its type reads. So the kept ops are grouped by a hash of their type and inputs, and an
// op's key is made only when its group already holds an op; a group's ops get theirs when first compared.
// Ops with equal keys are in one group, so an op merges into the same kept op as with a key for every op.
struct Kept {
  int op;
  int next;         // the group's next kept op, an index into the kept list, or -1
  std::string key;  // made on first comparison
};

}  // namespace

void common_subexpression_elimination(Job& job) {
  std::unordered_map<std::string, std::string> lbn_to, name_to;  // a merged op's lbns and name -> the kept op's
  // The groups as lists through one array of the kept ops (no vector per group: nearly every group has one).
  std::vector<Kept> kept;
  std::unordered_map<size_t, int> groups;  // type_and_inputs_hash -> the group's first in kept
  kept.reserve(static_cast<size_t>(job.ops_size()));
  groups.reserve(static_cast<size_t>(job.ops_size()));
  std::vector<bool> keep(job.ops_size(), true);
  for (int i = 0; i < job.ops_size(); ++i) {  // topological: producers are rewritten before their consumers
    OpConf& op = *job.mutable_ops(i);
    redirect(op, lbn_to, name_to);
    if (!mergeable(op)) continue;
    auto [first, added] = groups.try_emplace(type_and_inputs_hash(op), static_cast<int>(kept.size()));
    if (added) {
      kept.push_back(Kept{i, -1, {}});
      continue;
    }
    std::string key = merge_key(op);
    int same = -1, last = -1;
    for (int k = first->second; k >= 0 && same < 0; last = k, k = kept[k].next) {
      if (kept[k].key.empty()) kept[k].key = merge_key(job.ops(kept[k].op));
      if (kept[k].key == key) same = kept[k].op;
    }
    if (same < 0) {
      kept[last].next = static_cast<int>(kept.size());
      kept.push_back(Kept{i, -1, std::move(key)});
      continue;
    }
    const OpConf& kept = job.ops(same);
    for (int k = 0; k < op.outputs_size(); ++k) lbn_to[op.outputs(k)] = kept.outputs(k);
    name_to[op.name()] = kept.name();
    keep[i] = false;
  }
  remove_ops(job, keep);
}

}  // namespace rill::graph
