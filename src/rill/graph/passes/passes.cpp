// run_passes: the passes in their fixed order, each recorded in the job conf.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "rill/graph/memory_plan.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

using PassFn = void (*)(Job&);

struct PassEntry {
  std::string name;
  PassFn fn;
  bool optional;  // the job conf may turn it off (disabled_passes); the others make a job the compiler can run
};

const std::vector<PassEntry>& passes() {
  static const std::vector<PassEntry> list = {
      {"dead_op_elimination", dead_op_elimination, false},
      {"common_subexpression_elimination", common_subexpression_elimination, true},
      {"gradient_accumulation", gradient_accumulation, false},
      // The fusion passes: on the job's final ops, before the ticks order them.
      {"redundant_cast_elimination", redundant_cast_elimination, true},
      {"fuse_elementwise", fuse_elementwise, true},
      {"write_in_place", write_in_place, true},
      {"auto_tick", auto_tick, false},
      // The memory passes go here, last: in-place reuse needs every edge, the ticks' included. Buffer reuse is
      // the compiler's (memory_plan.cpp), on the plan's tasks; the config turns it off like a pass.
  };
  return list;
}

bool disabled(const Job& job, const std::string& name) {
  for (const std::string& d : job.conf().disabled_passes())
    if (d == name) return true;
  return false;
}

}  // namespace

void run_passes(Job& job) {
  RILL_CHECK(job.conf().pass_order_size() == 0, Runtime, "[graph] the passes already ran on job '",
             job.conf().name(), "'; run them once, on the traced job");
  const std::vector<std::string> known = optional_passes();
  for (const std::string& d : job.conf().disabled_passes()) {
    if (std::find(known.begin(), known.end(), d) != known.end()) continue;
    std::string names;
    for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
    RILL_FAIL(Value, "[graph] no optional pass is named '", d, "'; the passes a graph's config can turn off are: ",
              names);
  }
  for (const PassEntry& p : passes()) {
    if (p.optional && disabled(job, p.name)) continue;
    p.fn(job);
    job.mutable_conf()->add_pass_order(p.name);
  }
}

const std::vector<std::string>& pass_order() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PassEntry& p : passes()) out.push_back(p.name);
    return out;
  }();
  return names;
}

std::vector<std::string> optional_passes() {
  std::vector<std::string> out;
  for (const PassEntry& p : passes())
    if (p.optional) out.push_back(p.name);
  out.push_back(kMemoryReuse);
  return out;
}

}  // namespace rill::graph
