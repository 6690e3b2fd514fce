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

// The cast's readers see the same meta either way only when the input is dense and row-major (the cast's output
// is); a binding's value is left to its cast, so no assign writes a variable into itself. No OpGraph: only the
// producers of the casts' inputs are looked up (a 48-block job has ten thousand ops and a few hundred casts).
void redundant_cast_elimination(Job& job) {
  const int n = job.ops_size();
  auto is_cast = [](const OpConf& op) {
    return op.op_type() == "cast" && op.inputs_size() == 1 && op.output_descs_size() == 1 && op.ctrl_inputs_size() == 0;
  };
  std::unordered_map<std::string_view, BlobRef> producer;  // the casts' inputs (views of the job's strings)
  for (const OpConf& op : job.ops())
    if (is_cast(op)) producer.emplace(op.inputs(0), BlobRef{});
  if (producer.empty()) return;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < job.ops(i).outputs_size(); ++k)
      if (auto it = producer.find(job.ops(i).outputs(k)); it != producer.end()) it->second = BlobRef{i, k};
  std::unordered_map<std::string, std::string> lbn_to;
  std::unordered_map<std::string, std::string> name_to;  // a removed cast -> the producer of its input
  std::vector<bool> keep(n, true);
  for (int i = 0; i < n; ++i) {
    const OpConf& op = job.ops(i);
    if (!is_cast(op)) continue;
    const BlobRef p = producer.at(op.inputs(0));
    if (p.op < 0 || is_binding_op(job.ops(p.op)) || p.out >= job.ops(p.op).output_descs_size()) continue;
    const plan::TensorDesc& in = job.ops(p.op).output_descs(p.out);
    if (in.dtype() != op.output_descs(0).dtype() || !is_row_major(in)) continue;
    std::string source = op.inputs(0);
    if (auto it = lbn_to.find(source); it != lbn_to.end()) source = it->second;  // a cast of a removed cast
    lbn_to[op.outputs(0)] = source;
    const std::string& made_by = job.ops(p.op).name();
    auto named = name_to.find(made_by);
    name_to[op.name()] = named == name_to.end() ? made_by : named->second;
    keep[i] = false;
  }
  if (lbn_to.empty()) return;
  for (OpConf& op : *job.mutable_ops()) redirect(op, lbn_to, name_to);
  remove_ops(job, keep);
}

}  // namespace rill::graph
