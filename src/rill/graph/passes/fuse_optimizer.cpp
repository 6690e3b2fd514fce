// fuse_optimizer: the optimizer updates of one parameter group become one _multi_<update> op (ops/optim.cpp): one
// task updates every parameter of the group, each by its own update's kernel.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rill/graph/attrs.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {
namespace {

// Note [One update per parameter group]
// The updates of one op type with the same attrs, lr input, scope, stage and placement are a group: one
// parameter group of one optimizer. The group's op takes the place of its last member, so every input and ctrl
// input of the members is made before it (each member's are made before that member). Its inputs are the
// members' in order, each without the lr, then the lr; its outputs the members' outputs in order (the layout in
// ops/optim.cpp). A group fuses only when no member needs (through any chain of edges) a reader of a member's
// outputs, so nothing the fused op waits for waits for it; readers placed before the last member then move after
// it (the job is sorted again). The pass runs after write_in_place: an assign
// written in place names its member as a ctrl input, which becomes the fused op, and the fused op waits for the
// union of the members' ctrl inputs (each variable's other readers). A group of one stays as it is.

bool is_update(const std::string& op_type) {
  return op_type == "_sgd_update" || op_type == "_adam_update" || op_type == "_rmsprop_update";
}

// What the members of one group share, as one string.
std::string group_key(const OpConf& op) {
  std::vector<std::pair<std::string, std::string>> attrs;
  for (const auto& [name, value] : op.attrs()) attrs.emplace_back(name, attr_str(value));
  std::sort(attrs.begin(), attrs.end());  // a protobuf map has no order
  std::string key = op.op_type() + "\n" + op.inputs(op.inputs_size() - 1) + "\n" + op.scope() + "\n" +
                    std::to_string(op.stage()) + "\n";
  for (int64_t r : placement_ranks(op.placement())) key += std::to_string(r) + ",";
  for (const auto& [name, value] : attrs) key += "\n" + name + "=" + value;
  return key;
}

// Whether no member needs, through any chain of edges, an op that reads a member's outputs: then the fused op
// makes no cycle. reorder is set when such a reader comes before the last member (gradient accumulation puts
// each update's assigns right after it): the job is then sorted again.
bool no_cycle(const OpGraph& g, const std::vector<int>& members, bool& reorder) {
  const std::vector<bool> needed = g.ancestors(members);
  for (int m : members)
    for (std::span<const int> readers : {g.data_consumers(m), g.ctrl_consumers(m)})
      for (int c : readers) {
        if (needed[static_cast<size_t>(c)]) return false;
        reorder = reorder || c < members.back();
      }
  return true;
}

}  // namespace

void fuse_optimizer(Job& job) {
  std::optional<OpGraph> graph;
  fuse_optimizer(job, graph);
}

void fuse_optimizer(Job& job, std::optional<OpGraph>& graph) {
  if (!graph) graph.emplace(job);
  const OpGraph& g = *graph;
  const int n = g.size();
  std::unordered_map<std::string, int> group_of;
  std::vector<std::vector<int>> groups;
  for (int i = 0; i < n; ++i) {
    const OpConf& op = g.op(i);
    if (!is_update(op.op_type()) || op.inputs_size() < 4) continue;
    auto [it, added] = group_of.emplace(group_key(op), static_cast<int>(groups.size()));
    if (added) groups.emplace_back();
    groups[static_cast<size_t>(it->second)].push_back(i);
  }
  NameSet names(g);
  std::unordered_map<std::string, std::string> lbn_to, name_to;
  std::vector<bool> keep(n, true);
  bool reorder = false;
  for (const std::vector<int>& members : groups) {
    if (members.size() < 2 || !no_cycle(g, members, reorder)) continue;
    const OpConf& last = g.op(members.back());
    OpConf fused;
    const std::string type = "_multi" + last.op_type();
    fused.set_name(names.fresh(type));
    fused.set_op_type(type);
    *fused.mutable_attrs() = last.attrs();
    fused.set_scope(last.scope());
    fused.set_loc(last.loc());
    fused.set_stage(last.stage());
    *fused.mutable_placement() = last.placement();
    fused.set_task_index(last.task_index());
    const bool sbps = last.in_sbps_size() > 0;
    for (int m : members) {
      const OpConf& op = g.op(m);
      for (int k = 0; k + 1 < op.inputs_size(); ++k) {
        fused.add_inputs(op.inputs(k));
        if (sbps) fused.add_in_sbps(op.in_sbps(k));
      }
      for (int k = 0; k < op.outputs_size(); ++k) {
        const std::string lbn = fused.name() + "/out" + std::to_string(fused.outputs_size());
        lbn_to[op.outputs(k)] = lbn;
        fused.add_outputs(lbn);
        if (k < op.output_descs_size()) *fused.add_output_descs() = op.output_descs(k);
        if (sbps) fused.add_out_sbps(op.out_sbps(k));
      }
      for (const std::string& c : op.ctrl_inputs()) add_ctrl(fused, c);
      name_to[op.name()] = fused.name();
      keep[m] = false;
    }
    fused.add_inputs(last.inputs(last.inputs_size() - 1));
    if (sbps) fused.add_in_sbps(last.in_sbps(last.in_sbps_size() - 1));
    keep[members.back()] = true;
    *job.mutable_ops(members.back()) = std::move(fused);
  }
  if (name_to.empty()) return;  // the job as it was: the graph stays good for the next pass
  for (int i = 0; i < n; ++i)
    if (keep[i]) redirect(*job.mutable_ops(i), lbn_to, name_to);
  graph.reset();
  remove_ops(job, keep);
  if (reorder) sort_topologically(job);
}

}  // namespace rill::graph
