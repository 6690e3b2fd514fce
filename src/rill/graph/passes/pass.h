// Job passes (DESIGN.md §6): each rewrites a job in place, one per file, run in
// the fixed order run_passes() prints. Later issues add fusion and memory passes
// at the place the list marks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rill/graph/job.pb.h"
#include "rill/graph/op_graph.h"

namespace rill::graph {

/** Remove ops whose outputs nothing reads and that write no variable or output. */
void dead_op_elimination(Job& job);
/** Merge ops with the same op type, attrs, scalars and inputs (random ops excepted). */
void common_subexpression_elimination(Job& job);
/** With conf.ssp and N > 1 pieces: every trainable variable the optimizer updates is read through an
 * _ssp_variable_proxy by all but the optimizer (Note [SSP] in ssp.cpp). */
void ssp(Job& job);
/** With conf.gradient_accumulation_steps = N > 1: the forward and backward run N pieces per iteration on
 * micro-batches (input ops split along dim 0), gradients and the loss are accumulated (acc ops), and the
 * optimizer's ops and the assigns run once. */
void gradient_accumulation(Job& job);
/** Casts to the dtype their (dense, computed) input has are removed: their readers read the input. */
void redundant_cast_elimination(Job& job);
/** A float32 linear or conv2d whose output only an activation reads becomes, with it, one _linear_activation or
 * _conv2d_activation op (Note [Which producers fuse with their activation] in fuse_activation.cpp). */
void fuse_activation(Job& job);
/** A conv2d_backward_weight and the sum of its grad_output over dims 0, 2, 3 (the bias's gradient) become one
 * _conv2d_backward_weight_bias op (Note [A convolution's two parameter gradients in one task]). */
void fuse_bias_gradient(Job& job);
/** Chains of elementwise ops of one shape become one _fused_elementwise op each (Note [Which elementwise ops
 * fuse] in fuse_elementwise.cpp). */
void fuse_elementwise(Job& job);
/** In a global job: the placement of every op (Note [Boxing] in sbp.cpp), before any pass rewrites the traced
 * job; the passes after it keep it. Nothing in a job of this process. */
void place_ops(Job& job);
/** In a global job: pick each op's SBP signature and record it in the op (Note [SBP signatures] in ops/sbp.cpp,
 * Note [Boxing] in sbp.cpp). Nothing in a job of this process. */
void sbp_signatures(Job& job);
/** In a global job whose signatures sbp_signatures recorded: box the inputs whose producer's SBP differs, and
 * lower the job to the shapes of rank conf.rank, dropping the other ranks' ops. Nothing in a job of this process. */
void sbp_lowering(Job& job);
/** Optimizer updates write the variables they update in place, and the producers of the graph's outputs write
 * the launch's outputs; those assigns and outputs become ticks (Note [Updates in place] in write_in_place.cpp). */
void write_in_place(Job& job);
/** The same, leaving in graph the op graph of the job as the pass left it (Note [A graph for the next pass]). */
void write_in_place(Job& job, std::optional<OpGraph>& graph);
/** The optimizer updates of one parameter group become one _multi_<update> op (Note [One update per parameter
 * group] in fuse_optimizer.cpp). */
void fuse_optimizer(Job& job);
/** The same on graph, the job's op graph when the pass before left one (else it builds one); graph is empty
 * after when the pass changed the job (Note [A graph for the next pass]). */
void fuse_optimizer(Job& job, std::optional<OpGraph>& graph);
/** Source, sink and join ticks that bound each iteration: ops without data inputs start from the source tick;
 * the sink waits for every op nothing else waits for. */
void auto_tick(Job& job);
/** The same on graph, the job's op graph when the pass before left one (else it builds one); graph is empty
 * after. */
void auto_tick(Job& job, std::optional<OpGraph>& graph);

/** Run the passes in their fixed order, recording each in job.conf.pass_order: the logical passes, then the
 * rank's. */
void run_passes(Job& job);
/** The logical passes, which make the same job for every rank: from place_ops to sbp_signatures. */
void run_logical_passes(Job& job);
/** The passes that make the logical job rank conf.rank's: from sbp_lowering on. */
void run_rank_passes(Job& job);
/** The fixed order, by name. */
const std::vector<std::string>& pass_order();
/** The passes a job conf may turn off (JobConf.disabled_passes), in their order, then the compiler's buffer reuse
 * (kMemoryReuse in memory_plan.h). */
std::vector<std::string> optional_passes();

}  // namespace rill::graph
