// A traced job made runnable (DESIGN.md §6): passes, logical inference and the
// compiler turn the job into a plan; an actor runtime runs it. Each launch is
// one VM instruction on VM thread 0, as an eager op (Note [The eager-graph bridge]
// in compiled_graph.cpp), so eager ops before and after it are ordered by the
// tensors they share, and launch() returns at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rill/core/tensor.h"
#include "rill/graph/compiler.h"
#include "rill/graph/infer.h"
#include "rill/graph/job.h"
#include "rill/graph/separate.h"
#include "rill/ops/op_schema.h"
#include "rill/runtime/runtime.h"
#include "rill/vm/stream.h"

namespace rill::runtime {

/** What g.stats() reports. */
struct GraphStats {
  int64_t job_ops = 0;
  int64_t infer_computed = 0;
  int64_t infer_cache_hits = 0;
  double compile_s = 0;
  double compile_cpu_s = 0;  // this rank's CPU seconds compiling its part (0 for a part received whole)
  int64_t plan_bytes = 0;    // the plan, serialized
  int64_t plan_tasks = 0;
  int64_t planned_peak_bytes = 0;
  int64_t memory_lower_bound_bytes = 0;  // the plan's live_bytes_lower_bound
  int64_t fused_kernels = 0;             // _fused_elementwise ops of the job (fuse_elementwise's chains)
  int64_t fused_ops = 0;                 // the elementwise ops inside them
  int64_t launches = 0;
};

/** Register the graph_launch op and its kernel (idempotent; the Python module does it at import). */
void register_graph_ops();
/** The kernel of graph_launch: one iteration of the graph its attr names (Note [The eager-graph bridge]). */
void run_launch(const KernelContext& c);

class CompiledGraph {
 public:
  /** Run the passes, inference and the compiler on job for this process (rank 0 of a global job), whose
   * variable ops bind variables (in order); random_numbers: how many the traced step (one piece) draws from the
   * generator. Raises rill::Error naming the op. */
  CompiledGraph(graph::ArenaJob job, std::vector<Tensor> variables, int64_t random_numbers);
  /** Run part, this rank's part of the traced job that bound variables (graph/separate.h): compiled here or by the
   * master. */
  CompiledGraph(graph::RankPart part, std::vector<Tensor> variables, int64_t random_numbers);
  /** Waits for its launches still in flight. */
  ~CompiledGraph();
  CompiledGraph(const CompiledGraph&) = delete;
  CompiledGraph& operator=(const CompiledGraph&) = delete;

  /** The trace drew its random numbers from offset on: the first launch's first piece uses those, so its
   * masks are the ones eager's first step would draw (Note [Actors], randomness). */
  void use_traced_numbers(int64_t offset) { traced_offset_ = offset; }
  /** Start one iteration on inputs (the traced shapes and dtypes; a global graph's: each input's local tensor,
   * of which it binds those on this rank); returns the outputs at once (a global graph's: those on this rank). */
  std::vector<Tensor> launch(std::span<const Tensor> inputs);
  const graph::Job& job() const { return *job_; }
  const plan::Plan& plan() const { return runtime_->plan(); }
  GraphStats stats() const;
  /** The runtime (for its counters). */
  const Runtime& runtime() const { return *runtime_; }

 private:
  friend void run_launch(const KernelContext& c);
  /** A global job: the comm stream, and the local tensors of the variables the rank's plan binds, of those the
   * trace bound (Note [Graphs that communicate]). */
  void bind_this_rank();
  bool global_ = false;
  std::vector<int> bound_inputs_;  // a global graph's: the traced indices of the inputs this rank binds
  vm::Stream stream_;       // where launches run: thread 0, or the comm stream for a plan with collectives
  vm::Stream comm_stream_;  // a global graph's: the process group's comm stream
  graph::ArenaJob job_;
  std::vector<Tensor> variables_;
  std::vector<int> read_variables_, written_variables_;  // indices into variables_
  std::vector<MetaSym> input_metas_, output_metas_;      // the plan's inputs and outputs (checked, made per launch)
  int64_t random_numbers_;  // drawn by one piece
  int64_t traced_offset_ = -1;  // where the trace's numbers start, until the first launch uses them
  std::pair<Scalar, Scalar> take_random(int64_t total);
  std::unique_ptr<Runtime> runtime_;
  GraphStats stats_;
  int64_t id_;
  AttrsSym launch_attrs_;  // graph_launch's attrs: this graph's id
  std::vector<Tensor> last_outputs_;  // the latest launch's outputs and written variables (the destructor waits)
};

}  // namespace rill::runtime
