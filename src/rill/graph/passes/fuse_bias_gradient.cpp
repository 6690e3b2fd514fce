// fuse_bias_gradient: a convolution's weight gradient and its bias's gradient, two ops that read the same
// grad_output, become one _conv2d_backward_weight_bias op (ops/conv.cpp): one task, and the bias's sum over the
// batch and the planes by vector row sums instead of a general reduction over three dims.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {
namespace {

// Whether op is the bias's gradient of a conv2d: grad_output (4-D, float) summed over dims 0, 2 and 3.
bool is_bias_gradient(const OpConf& op) {
  if (op.op_type() != "sum" || op.inputs_size() != 1 || op.ctrl_inputs_size() != 0 || op.output_descs_size() != 1)
    return false;
  auto dim = op.attrs().find("dim"), keepdim = op.attrs().find("keepdim"), dtype = op.attrs().find("dtype");
  if (dim == op.attrs().end() || keepdim == op.attrs().end() || keepdim->second.b()) return false;
  if (dtype != op.attrs().end() && !dtype->second.none()) return false;
  const auto& d = dim->second.ints().v();
  return d.size() == 3 && d[0] == 0 && d[1] == 2 && d[2] == 3;
}

}  // namespace

// Note [A convolution's two parameter gradients in one task]
// A sum S of a 4-D float grad_output g over dims 0, 2 and 3 and a conv2d_backward_weight W reading g as its
// grad_output (both without ctrl edges, of one scope, stage and placement) become one op: W's inputs and attrs,
// W's name and its output first, S's output second. It takes the place of whichever of the two comes first in the
// job: both read only values made before either (g, and W's input), and every reader of either output comes
// after its own producer, so after the first. In a global job the op has conv2d_backward_weight's signature
// (a batch split makes both gradients partial sums).
void fuse_bias_gradient(Job& job) {
  const OpGraph g(job);
  const int n = g.size();
  std::unordered_map<std::string, int> weight_of;  // grad_output lbn -> the conv2d_backward_weight reading it
  for (int i = 0; i < n; ++i) {
    const OpConf& op = g.op(i);
    if (op.op_type() == "conv2d_backward_weight" && op.ctrl_inputs_size() == 0 && g.ctrl_consumers(i).empty() &&
        op.inputs_size() == 2 && op.output_descs_size() == 1)
      weight_of.emplace(op.inputs(0), i);
  }
  if (weight_of.empty()) return;
  std::vector<bool> keep(n, true);
  std::unordered_map<std::string, std::string> lbn_to, name_to;
  for (int s = 0; s < n; ++s) {
    const OpConf& sum = g.op(s);
    if (!is_bias_gradient(sum) || !g.ctrl_consumers(s).empty()) continue;
    auto it = weight_of.find(sum.inputs(0));
    if (it == weight_of.end()) continue;
    const int w = it->second;
    const OpConf& weight = g.op(w);
    const plan::TensorDesc& out = sum.output_descs(0);
    if (!keep[w] || weight.scope() != sum.scope() || weight.stage() != sum.stage() ||
        placement_ranks(weight.placement()) != placement_ranks(sum.placement()) ||
        (out.dtype() != "float32" && out.dtype() != "float64"))
      continue;
    OpConf fused = weight;
    fused.set_op_type("_conv2d_backward_weight_bias");
    const std::string bias_lbn = fused.name() + "/out1";
    fused.add_outputs(bias_lbn);
    *fused.add_output_descs() = out;
    lbn_to[sum.outputs(0)] = bias_lbn;
    name_to[sum.name()] = fused.name();
    const int first = std::min(s, w), second = std::max(s, w);
    *job.mutable_ops(first) = std::move(fused);
    keep[second] = false;
    weight_of.erase(it);
  }
  if (lbn_to.empty()) return;
  for (int i = 0; i < n; ++i)
    if (keep[i]) redirect(*job.mutable_ops(i), lbn_to, name_to);
  remove_ops(job, keep);
}

}  // namespace rill::graph
