// The memory plan of a compiled plan (private to graph/; DESIGN.md §6): the order the
// tasks of a stream run in, the lifetime of each owned register in that order, and
// where in the plan's chunk each register lives (Note [The memory plan] in memory_plan.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "rill/graph/plan.pb.h"

namespace rill::graph {

/** The name JobConf.disabled_passes uses to turn buffer reuse off (each register then has memory of its own). */
inline constexpr const char* kMemoryReuse = "memory_reuse";

/** Bytes from a desc's element 0 to the end of its last element. */
int64_t desc_bytes(const plan::TensorDesc& d);

/** Lay out the owned registers of plan in one chunk and set planned_peak_bytes and live_bytes_lower_bound. With
 * reuse, the tasks of each stream are first chained in plan order (ctrl registers, ids from next_id, where no
 * edge orders two neighbours already) and registers whose lifetimes do not overlap share memory. */
void plan_memory(plan::Plan& plan, bool reuse, const std::function<int64_t()>& next_id);

}  // namespace rill::graph
