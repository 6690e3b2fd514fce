// dead_op_elimination: what no output, assign or tick needs is removed.
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {

void dead_op_elimination(Job& job) {
  const OpGraph g(job);
  std::vector<int> roots;
  for (int i = 0; i < g.size(); ++i) {
    const std::string& t = g.op(i).op_type();
    // Variables and inputs stay too: the launch binds them by position (attr "index").
    if (t == kOutput || t == kAssign || t == kTick || is_binding_op(g.op(i))) roots.push_back(i);
  }
  std::vector<bool> live = g.ancestors(roots);
  for (int i : roots) live[i] = true;
  remove_ops(job, live);
}

}  // namespace rill::graph
