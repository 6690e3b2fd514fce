#include "rill/runtime/compiled_graph.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "rill/core/sbp.h"
#include "rill/eager/functional.h"
#include "rill/graph/passes/pass.h"
#include "rill/graph/attrs.h"
#include "rill/ops/fused.h"
#include "rill/runtime/process_group.h"
#include "rill/util/error.h"

namespace rill::runtime {

// Note [The eager-graph bridge]
// A graph call is one VM instruction of the graph_launch op on VM thread 0, where
// eager kernels run: it reads the graph's inputs and the variables the plan only
// reads, and writes its outputs and the variables the plan assigns. So the VM
// orders it after the eager ops that produce what it reads and before the ones
// that read what it writes, as any op, and the call returns at once. Its kernel
// binds the tensors' memory to the plan's external registers and runs the actor
// runtime there (the plan's other streams on the runtime's own threads); a
// kernel error poisons the outputs and reaches the user at the next sync point,
// like an eager kernel's. The variables are the eager tensors themselves
// (parameters, buffers, optimizer state), so eager code sees the trained values
// after a call.
// Thread 0 and not a VM thread of its own: a launch there is one hand-off fewer,
// and a client waiting for the result runs it itself when the scheduler is not
// running (Note [A waiter runs the queue] in vm/scheduler.cpp). On its own thread
// the tiny MLP's training step took 50-74 us, of which the hand-offs between the
// client, the scheduler and that thread were most; on thread 0, 27-31 us. A long
// graph holds thread 0 as a long eager kernel does.

// Note [Graphs that communicate]
// A global graph's plan has boxing tasks that call MPI (ops/boxing.cpp), which only the comm thread may call
// (Note [The comm stream] in comm/collectives.cpp). Such a graph launches on the comm stream instead of thread 0:
// its actors, compute and collectives alike, run there, ordered with the eager collectives by submission, as
// every rank issues them. Its variables are the local tensors of the global ones the trace bound.

namespace {

std::mutex g_mutex;
std::unordered_map<int64_t, CompiledGraph*> g_graphs;
int64_t g_next_id = 1;

CompiledGraph* find_graph(int64_t id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_graphs.find(id);
  RILL_ASSERT(it != g_graphs.end(), "graph_launch of graph ", id, ", which no longer exists");
  return it->second;
}

InferResult infer_launch(const InferContext&) {
  RILL_FAIL(Runtime, "[graph_launch] is issued by nn.Graph calls only");
}

const OpSchema& launch_op() {
  static const OpSchema& op = [&]() -> const OpSchema& {
    eager::op("add");  // the registry and kernels first
    ops::define("graph_launch(Tensor[] inputs, Scalar seed, Scalar offset, int graph) -> Tensor[]", infer_launch,
                {.differentiable = false}, "one iteration of a compiled nn.Graph");
    ops::set_cpu_kernel("graph_launch", run_launch);
    return ops::get("graph_launch");
  }();
  return op;
}

}  // namespace

void register_graph_ops() { launch_op(); }

void run_launch(const KernelContext& c) {
  CompiledGraph& g = *find_graph(c.attr<int64_t>("graph"));
  const plan::Plan& p = g.runtime_->plan();
  const size_t n_in = static_cast<size_t>(p.inputs_size()), n_out = static_cast<size_t>(p.outputs_size());
  std::vector<void*> variables(g.variables_.size()), inputs(n_in), outputs(n_out);
  for (size_t i = 0; i < n_in; ++i) inputs[i] = c.inputs[i].data;
  for (size_t i = 0; i < g.read_variables_.size(); ++i) variables[g.read_variables_[i]] = c.inputs[n_in + i].data;
  for (size_t i = 0; i < n_out; ++i) outputs[i] = c.outputs[i].data;
  for (size_t i = 0; i < g.written_variables_.size(); ++i)
    variables[g.written_variables_[i]] = c.outputs[n_out + i].data;
  Bindings b{variables, inputs, outputs, c.scalars[0].to_int(), c.scalars[1].to_int(), g.random_numbers_};
  g.runtime_->run(b);
}

CompiledGraph::CompiledGraph(graph::ArenaJob job, std::vector<Tensor> variables, int64_t random_numbers)
    : CompiledGraph(graph::compile_job(std::move(job)), std::move(variables), random_numbers) {}

CompiledGraph::CompiledGraph(graph::RankPart part, std::vector<Tensor> variables, int64_t random_numbers)
    : job_(std::move(part.job)), variables_(std::move(variables)), random_numbers_(random_numbers) {
  auto start = std::chrono::steady_clock::now();
  bind_this_rank();
  const plan::Plan& plan = *part.plan;
  for (int i = 0; i < plan.variables_size(); ++i)
    (plan.variables(i).written() ? written_variables_ : read_variables_).push_back(i);
  RILL_ASSERT(static_cast<size_t>(plan.variables_size()) == variables_.size(), "the plan binds ",
              plan.variables_size(), " variables, the trace ", variables_.size());
  stats_.planned_peak_bytes = plan.planned_peak_bytes();
  stats_.memory_lower_bound_bytes = plan.live_bytes_lower_bound();
  stats_.plan_tasks = plan.tasks_size();
  stats_.plan_bytes = static_cast<int64_t>(plan.ByteSizeLong());
  for (const plan::Task& t : plan.tasks())
    if (t.kind() == plan::TASK_COMPUTE && ops::get(t.op()).flags.collective) stream_ = comm_stream_;
  for (const plan::TensorDesc& d : plan.inputs()) input_metas_.push_back(graph::meta_from_proto(d));
  for (const plan::TensorDesc& d : plan.outputs()) output_metas_.push_back(graph::meta_from_proto(d));
  runtime_ = std::make_unique<Runtime>(std::move(part.plan), job_->conf().name());
  stats_.job_ops = job_->ops_size();
  for (const graph::OpConf& op : job_->ops())
    if (op.op_type() == fused::kOpName) {
      ++stats_.fused_kernels;
      stats_.fused_ops += static_cast<int64_t>(fused::program_of(*graph::attrs_from_proto(
          ops::get(fused::kOpName), op.attrs())).steps.size());
    }
  stats_.infer_computed = part.infer.computed;
  stats_.infer_cache_hits = part.infer.hits;
  stats_.compile_cpu_s = part.compile_cpu_s;
  stats_.compile_s = part.compile_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  launch_op();
  std::lock_guard<std::mutex> lock(g_mutex);
  id_ = g_next_id++;
  g_graphs[id_] = this;
  std::vector<AttrValue> attrs;  // one by one: GCC 12 warns falsely on a braced list of these variants
  attrs.emplace_back(id_);
  launch_attrs_ = make_attrs(std::move(attrs));
}

CompiledGraph::~CompiledGraph() {
  for (const Tensor& t : last_outputs_) {
    try {
      eager::wait_readable(t);
    } catch (const Error&) {
      // The launch failed; its error was the user's to read from the outputs.
    }
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_graphs.erase(id_);
}

std::vector<Tensor> CompiledGraph::launch(std::span<const Tensor> all_inputs) {
  const plan::Plan& p = runtime_->plan();
  std::vector<Tensor> mine;  // a global graph's: the inputs this rank binds
  if (global_) {
    for (int i : bound_inputs_) {
      RILL_CHECK(static_cast<size_t>(i) < all_inputs.size(), Runtime, "[nn.Graph] the graph takes more inputs");
      mine.push_back(all_inputs[static_cast<size_t>(i)]);
    }
  }
  std::span<const Tensor> inputs = global_ ? std::span<const Tensor>(mine) : all_inputs;
  RILL_CHECK(inputs.size() == static_cast<size_t>(p.inputs_size()), Runtime, "[nn.Graph] the graph takes ",
             p.inputs_size(), " tensor inputs, got ", inputs.size());
  std::vector<Tensor> reads(inputs.begin(), inputs.end()), writes;
  for (size_t i = 0; i < inputs.size(); ++i)
    RILL_CHECK(inputs[i].meta() == input_metas_[i], Runtime, "[nn.Graph] input ", i, " is ",
               inputs[i].meta()->str(), " but the plan was compiled for ", input_metas_[i]->str());
  writes.reserve(output_metas_.size() + written_variables_.size());
  for (const MetaSym& m : output_metas_) writes.push_back(Tensor::empty(m));
  std::vector<Tensor> outputs(writes);
  for (int i : read_variables_) reads.push_back(variables_[i]);
  for (int i : written_variables_) writes.push_back(variables_[i]);
  // Every piece draws its own numbers (Note [Actors], randomness): the launch takes a whole iteration's.
  auto [seed, offset] = take_random(random_numbers_ * std::max<int64_t>(p.pieces(), 1));
  Scalar scalars[2] = {seed, offset};
  eager::submit_on(launch_op(), reads, scalars, launch_attrs_, writes, stream_);
  last_outputs_ = std::move(writes);
  ++stats_.launches;
  return outputs;
}

std::pair<Scalar, Scalar> CompiledGraph::take_random(int64_t total) {
  if (traced_offset_ >= 0 && random_numbers_ > 0) {
    const int64_t traced = std::exchange(traced_offset_, -1);
    // The trace's numbers are the first piece's; the other pieces take theirs right after, when no draw came
    // between (else fresh numbers for the whole iteration, as any later launch takes).
    auto [seed, rest] = eager::take_random(total - random_numbers_);
    if (rest.to_int() == traced + random_numbers_) return {seed, Scalar(traced)};
  }
  return eager::take_random(total);
}

GraphStats CompiledGraph::stats() const { return stats_; }

void CompiledGraph::bind_this_rank() {
  const graph::JobConf& conf = job_->conf();
  if (!conf.global()) return;
  const std::optional<ProcessGroup> group = process_group();
  RILL_CHECK(group.has_value(), Runtime, "[nn.Graph] the graph's tensors are global: call "
             "rill.distributed.init_process_group() first");
  RILL_CHECK(conf.rank() == group->rank, Runtime, "[nn.Graph] the plan is rank ", conf.rank(),
             "'s, and this process is rank ", group->rank);
  comm_stream_ = group->stream;
  global_ = true;
  std::vector<Tensor> bound;
  for (int i : conf.bound_variables()) {
    RILL_CHECK(static_cast<size_t>(i) < variables_.size(), Runtime, "[nn.Graph] the plan binds variable ", i,
               " and the trace bound ", variables_.size(), ": the ranks traced different graphs");
    const Tensor& v = variables_[static_cast<size_t>(i)];
    const GlobalInfo* g = global_info(v);
    bound.push_back(g != nullptr ? g->local : v);
  }
  variables_ = std::move(bound);
  bound_inputs_.assign(conf.bound_inputs().begin(), conf.bound_inputs().end());
}

}  // namespace rill::runtime
