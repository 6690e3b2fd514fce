// redundant_cast_elimination: a cast to the dtype its input already has is a copy (eager's clone(), which autograd
// uses so that a parameter's .grad never shares memory with a value someone else holds); in a job, where no op
// writes into another's output, its readers can read the input itself.
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/graph/attrs.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {
namespace {

// The cast's readers see the same meta either way only when the input is dense and row-major (the cast's output
// is); a binding's value is left to its cast, so no assign writes a variable into itself.
bool redundant(const OpGraph& g, const OpConf& op) {
  if (op.op_type() != "cast" || op.inputs_size() != 1 || op.output_descs_size() != 1 || op.ctrl_inputs_size() != 0)
    return false;
  const BlobRef p = g.producer(op.inputs(0));
  if (p.op < 0 || is_binding_op(g.op(p.op)) || p.out >= g.op(p.op).output_descs_size()) return false;
  const plan::TensorDesc& in = g.op(p.op).output_descs(p.out);
  const plan::TensorDesc& out = op.output_descs(0);
  return in.dtype() == out.dtype() && is_row_major(in);
}

}  // namespace

void redundant_cast_elimination(Job& job) {
  const OpGraph g(job);
  std::unordered_map<std::string, std::string> lbn_to;
  std::unordered_map<std::string, std::string> name_to;  // a removed cast -> the producer of its input
  std::vector<bool> keep(g.size(), true);
  for (int i = 0; i < g.size(); ++i) {
    const OpConf& op = g.op(i);
    if (!redundant(g, op)) continue;
    std::string in = op.inputs(0);
    if (auto it = lbn_to.find(in); it != lbn_to.end()) in = it->second;  // a cast of a removed cast
    lbn_to[op.outputs(0)] = in;
    const std::string& producer = g.op(g.producer(op.inputs(0)).op).name();
    auto named = name_to.find(producer);
    name_to[op.name()] = named == name_to.end() ? producer : named->second;
    keep[i] = false;
  }
  if (lbn_to.empty()) return;
  for (OpConf& op : *job.mutable_ops()) redirect(op, lbn_to, name_to);
  remove_ops(job, keep);
}

}  // namespace rill::graph
