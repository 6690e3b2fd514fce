// dead_op_elimination: what no output, assign or tick needs is removed.
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {

void dead_op_elimination(Job& job) {
  const OpGraph g(job);
  std::vector<bool> live(g.size(), false);
  std::vector<int> stack;
  for (int i = 0; i < g.size(); ++i) {
    const std::string& t = g.op(i).op_type();
    // Variables and inputs stay too: the launch binds them by position (attr "index").
    if (t == kOutput || t == kAssign || t == kTick || is_binding_op(g.op(i))) {
      live[i] = true;
      stack.push_back(i);
    }
  }
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    for (int p : g.predecessors(i))
      if (!live[p]) {
        live[p] = true;
        stack.push_back(p);
      }
  }
  remove_ops(job, live);
}

}  // namespace rill::graph
