// ssp: stale synchronous pipelining. Each trainable variable the optimizer updates gets an _ssp_variable_proxy,
// whose copies its forward and backward readers read instead of the variable.
#include <algorithm>
#include <string>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {

// Note [SSP]
// A synchronous pipeline of p stages drains at every optimizer step: stage 0's forward of the next step needs
// the weights its own backward, the last thing of the step, updates. Stale synchronous parallel (OneFlow's SSP)
// lets stage s run ahead on weights up to p - s - 1 updates old instead, so the stages never wait for each
// other's steps. With JobConf.ssp, each piece of a call is a training step of its own: the optimizer, its
// scheduler and the assigns run per piece on that piece's gradients (once_by_role puts nothing in the once
// part but the outputs, which stay the mean over the pieces), and this pass gives each trainable variable v of
// stage s a proxy op,
//     value = _ssp_variable_proxy(v, buffer_size = p - s, stage = s),
// which every reader of v but the optimizer's ops then reads (the optimizer reads and updates v itself: it is
// OneFlow's proxy's `ref`). Its task (TASK_SSP_PROXY) copies v into piece i of a ring of buffer_size buffers,
// once the update of piece i - buffer_size has written v (auto_tick gives it that carried edge, Note [Orders
// carried from piece to piece] in auto_tick.cpp): so piece i's forward and backward both read one copy, which
// lacks at most the last buffer_size - 1 updates, and the runtime counts how many it lacked (Runtime::ssp(),
// g.stats()["ssp"]). Without stages p is 1: every copy is current, and a call is pieces steps one after another.
// With one piece per call there is nothing to run ahead of, and the pass adds nothing.
void ssp(Job& job) {
  if (!job.conf().ssp() || job_pieces(job) <= 1) return;
  const OpGraph g(job);
  const int stages = std::max(1, job.conf().stages_size());
  std::vector<bool> updated(g.size(), false);
  for (int a = 0; a < g.size(); ++a)
    if (const int v = g.assign_target(a); v >= 0) updated[v] = true;
  NameSet names(g);
  const int original = g.size();
  for (int v = 0; v < original; ++v) {
    if (!updated[v] || !g.trainable_variable(v)) continue;
    const OpConf& var = job.ops(v);
    const std::string& lbn = var.outputs(0);
    std::vector<int> readers;  // each op once
    int stage = var.stage();
    for (int r : g.data_consumers(v)) {
      const OpConf& op = job.ops(r);
      if (op.scope() == kOptimizerScope || g.assign_target(r) == v) continue;
      if (std::find(readers.begin(), readers.end(), r) != readers.end()) continue;
      readers.push_back(r);
      if (stage == 0 || (op.stage() > 0 && op.stage() < stage)) stage = op.stage();
    }
    if (readers.empty()) continue;
    const int stage_id = std::max(0, stage - 1);
    OpConf* proxy = add_op(job, names.fresh(var.name() + "-ssp"), kSspProxy, "forward", 1);
    proxy->add_inputs(lbn);
    (*proxy->mutable_attrs())["buffer_size"].set_i(std::max(1, stages - stage_id));
    (*proxy->mutable_attrs())["stage"].set_i(stage_id);
    proxy->set_stage(stage);
    proxy->set_loc(var.loc());
    *proxy->mutable_placement() = var.placement();
    if (var.output_descs_size()) *proxy->add_output_descs() = var.output_descs(0);
    const std::string value = proxy->outputs(0);
    for (int r : readers)
      for (std::string& in : *job.mutable_ops(r)->mutable_inputs())
        if (in == lbn) in = value;
  }
  sort_topologically(job);
}

}  // namespace rill::graph
