// run_passes: the passes in their fixed order, each recorded in the job conf.
#include <string>
#include <utility>
#include <vector>

#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using PassFn = void (*)(Job&);

const std::vector<std::pair<std::string, PassFn>>& passes() {
  static const std::vector<std::pair<std::string, PassFn>> list = {
      {"dead_op_elimination", dead_op_elimination},
      {"common_subexpression_elimination", common_subexpression_elimination},
      {"gradient_accumulation", gradient_accumulation},
      // The fusion passes go here: on the job's final ops, before the ticks order them.
      {"auto_tick", auto_tick},
      // The memory passes go here, last: lifetimes and in-place reuse need every edge, the ticks' included.
  };
  return list;
}

}  // namespace

void run_passes(Job& job) {
  RILL_CHECK(job.conf().pass_order_size() == 0, Runtime, "[graph] the passes already ran on job '",
             job.conf().name(), "'; run them once, on the traced job");
  for (const auto& [name, pass] : passes()) {
    pass(job);
    job.mutable_conf()->add_pass_order(name);
  }
}

const std::vector<std::string>& pass_order() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : passes()) out.push_back(entry.first);
    return out;
  }();
  return names;
}

}  // namespace rill::graph
