// fuse_activation: a linear or conv2d whose output only an activation reads becomes, with that activation, one
// _linear_activation or _conv2d_activation op (ops/fused_activation.h): one task (Note [A linear and its activation
// in one kernel] in kernels/cpu/nn.cpp).
#include <string>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/ops/fused_activation.h"

namespace rill::graph {

// Note [Which producers fuse with their activation]
// A linear or conv2d P (float32, no ctrl edges either way) fuses with the op A that reads its output when A is the
// only op reading it, A is one of kFusedActivations with P's output as its one input, and both are of one scope,
// stage and placement. A becomes the fused op, with P's inputs and attrs and the activation's, under its own name
// and outputs: A's readers are untouched, and the job stays in order (P's inputs come before P, so before A). P
// goes. In training the activations whose gradient reads their output fuse (tanh, sigmoid); gelu's and silu's
// gradients read their input, P's output, which then has a second reader, so those fuse in inference only. So does
// relu: its gradient's mask (le_scalar of its output) is written by the forward in the same pass as relu itself
// (fuse_elementwise), which measured cheaper than a fused relu whose mask the backward then computes from the
// output (MLP 64-128-128-10 + Adam step 1.048x as long, digits CNN 1.019x; bench/graph.py --ab).
// In a global job the fused linear has linear's SBP signatures less those with a partial-sum output (ops/nn.cpp):
// an activation of a summand is not a summand, so a row-parallel linear keeps its partial sum and boxing unfused.

namespace {

// Whether an op reads op a's output to make a mask of it (relu's gradient: where(le_scalar(y, 0), 0, grad)).
bool reads_a_mask(const OpGraph& g, int a) {
  for (int c : g.data_consumers(a))
    if (g.op(c).op_type() == "le_scalar") return true;
  return false;
}

}  // namespace

void fuse_activation(Job& job) {
  const OpGraph g(job);
  const int n = g.size();
  std::vector<bool> keep(n, true);
  bool fused = false;
  for (int a = 0; a < n; ++a) {
    const OpConf& act = g.op(a);
    if (!ops::is_fused_activation(act.op_type()) || act.inputs_size() != 1 || act.ctrl_inputs_size() != 0) continue;
    const BlobRef p = g.input_producer(a, 0);
    if (p.op < 0 || (act.op_type() == "relu" && reads_a_mask(g, a))) continue;
    const OpConf& producer = g.op(p.op);
    const bool linear = producer.op_type() == "linear";
    if ((!linear && producer.op_type() != "conv2d") || producer.ctrl_inputs_size() != 0 ||
        !g.ctrl_consumers(p.op).empty() || g.data_consumers(p.op).size() != 1 || producer.output_descs_size() != 1 ||
        producer.output_descs(0).dtype() != "float32" || producer.scope() != act.scope() ||
        producer.stage() != act.stage() ||
        placement_ranks(producer.placement()) != placement_ranks(act.placement()))
      continue;
    plan::AttrValue name, approximate;
    name.set_s(act.op_type());
    auto given = act.attrs().find("approximate");
    approximate.set_s(given != act.attrs().end() ? given->second.s() : "none");
    OpConf& f = *job.mutable_ops(a);
    *f.mutable_inputs() = producer.inputs();
    *f.mutable_attrs() = producer.attrs();
    (*f.mutable_attrs())["activation"] = name;
    (*f.mutable_attrs())["approximate"] = approximate;
    f.set_op_type(linear ? "_linear_activation" : "_conv2d_activation");
    keep[p.op] = false;
    fused = true;
  }
  if (fused) remove_ops(job, keep);
}

}  // namespace rill::graph
