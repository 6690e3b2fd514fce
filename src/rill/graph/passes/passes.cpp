// run_passes: the passes in their fixed order, each recorded in the job conf.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/graph/memory_plan.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

// Note [A graph for the next pass]
// Building a job's op graph reads every name and lbn of ten thousand ops: a good part of a large job's passes.
// A pass that changes the job only by ctrl edges it can name by index (write_in_place) keeps its graph up to date
// (OpGraph::add_ctrl_edges) and hands it to the next pass that takes one (auto_tick), which builds none. Any
// other pass in between drops it.
using PassFn = void (*)(Job&);
using GraphPassFn = void (*)(Job&, std::optional<OpGraph>&);

struct PassEntry {
  std::string name;
  PassFn fn;
  bool optional;  // the job conf may turn it off (disabled_passes); the others make a job the compiler can run
  GraphPassFn graph_fn = nullptr;  // fn, taking and leaving the op graph (Note [A graph for the next pass])
};

// The logical passes are the first kLogicalPasses of the list: they make the job every rank's plan comes from
// (Note [Separate compilation] in graph/separate.cpp); the rest make it one rank's.
constexpr size_t kLogicalPasses = 10;

const std::vector<PassEntry>& passes() {
  static const std::vector<PassEntry> list = {
      {"place_ops", place_ops, false},  // a global job's: on the traced job, whose gradients name their ops
      {"dead_op_elimination", dead_op_elimination, false},
      {"common_subexpression_elimination", common_subexpression_elimination, true},
      {"ssp", ssp, false},  // before gradient_accumulation: under SSP the optimizer runs per piece
      {"gradient_accumulation", gradient_accumulation, false},
      // The fusion passes: on the job's final ops, before the ticks order them.
      {"redundant_cast_elimination", redundant_cast_elimination, true},
      {"fuse_activation", fuse_activation, true},  // before fuse_elementwise takes the activations
      {"fuse_bias_gradient", fuse_bias_gradient, true},
      {"fuse_elementwise", fuse_elementwise, true},
      // The global view: after the logical rewrites, the signatures, and then the job becomes this rank's.
      {"sbp_signatures", sbp_signatures, false},
      {"sbp_lowering", sbp_lowering, false},
      {"write_in_place", write_in_place, true, write_in_place},
      {"fuse_optimizer", fuse_optimizer, true, fuse_optimizer},  // after write_in_place, whose edges it carries
      {"auto_tick", auto_tick, false, auto_tick},
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

// Runs passes [first, last) of the list.
void run_range(Job& job, size_t first, size_t last) {
  std::optional<OpGraph> graph;
  for (size_t k = first; k < last; ++k) {
    const PassEntry& p = passes()[k];
    if (p.optional && disabled(job, p.name)) continue;
    if (p.graph_fn) {
      p.graph_fn(job, graph);
    } else {
      graph.reset();
      p.fn(job);
    }
    job.mutable_conf()->add_pass_order(p.name);
  }
}

void check_disabled(const Job& job) {
  const std::vector<std::string> known = optional_passes();
  for (const std::string& d : job.conf().disabled_passes()) {
    if (std::find(known.begin(), known.end(), d) != known.end()) continue;
    std::string names;
    for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
    RILL_FAIL(Value, "[graph] no optional pass is named '", d, "'; the passes a graph's config can turn off are: ",
              names);
  }
}

}  // namespace

void run_logical_passes(Job& job) {
  RILL_CHECK(job.conf().pass_order_size() == 0, Runtime, "[graph] the passes already ran on job '",
             job.conf().name(), "'; run them once, on the traced job");
  check_disabled(job);
  run_range(job, 0, kLogicalPasses);
}

void run_rank_passes(Job& job) {
  const auto& done = job.conf().pass_order();
  RILL_CHECK(!done.empty() && done[done.size() - 1] == passes()[kLogicalPasses - 1].name, Runtime,
             "[graph] job '", job.conf().name(), "' is not a logical job: run the logical passes on it first, once");
  run_range(job, kLogicalPasses, passes().size());
}

void run_passes(Job& job) {
  run_logical_passes(job);
  run_rank_passes(job);
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
