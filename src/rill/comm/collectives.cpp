#include "rill/comm/collectives.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/runtime/process_group.h"
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"
#include "rill/vm/virtual_machine.h"

namespace rill::comm {

// Note [The comm stream]
// A collective is an instruction like any op (docs/architecture.md §3): dist.all_reduce(t) returns at once,
// ordered after the ops that write t and before those that read it, by the VM's dependences. Its stream is
// a VM thread id of its own, reserved at init, whose worker is the comm thread: the one thread of the
// process that calls MPI (it called MPI_Init_thread, so MPI_THREAD_FUNNELED is enough). The instructions
// run there in submission order, which is the order every rank must issue its collectives in. A blocking
// collective holds the comm thread while compute goes on on the others; a send or receive is posted and
// handed to finish_later (Note [Kernels that finish later] in vm/worker.cpp), so the comm thread goes on
// to the next operation while the transfer waits for its peer. An MPI failure poisons what the operation
// writes, and surfaces at the next sync point, as a kernel error does. Tensors that are not dense go
// through a dense copy (a VM op before, a copy back after), so every layout works.
namespace {

int16_t g_thread_id = -1;             // the comm stream's VM thread id
std::atomic<bool> g_initialized{false};
bool g_forked = false;                // this process is a fork of one that started MPI
int g_world_rank = 0, g_world_size = 1;
// Touched by the kernels only, that is on the comm thread: group id -> this rank's communicator (null where
// the rank is not a member).
std::vector<std::unique_ptr<Communicator>> g_groups;
std::unique_ptr<Communicator> g_graph_peers;  // the world again, for graph transfers (made at init)

class PendingRequest final : public vm::PendingWork {
 public:
  explicit PendingRequest(std::unique_ptr<Request> request) : request_(std::move(request)) {}
  bool poll() override { return request_->test(); }

 private:
  std::unique_ptr<Request> request_;
};

void finish(std::unique_ptr<Request> request) {
  if (request && !request->test()) vm::finish_later(std::make_unique<PendingRequest>(std::move(request)));
}

Communicator& group_of(const KernelContext& ctx) { return communicator(ctx.attr<int64_t>("group")); }

ReduceOp reduce_op(const KernelContext& ctx) { return static_cast<ReduceOp>(ctx.attr<int64_t>("op")); }
int64_t bytes_of(const TensorArg& t) { return t.meta->numel * static_cast<int64_t>(dtype_itemsize(t.meta->dtype)); }
void set_token(const KernelContext& ctx) { *ctx.outputs[0].ptr<int64_t>() = 1; }

void kernel_init(const KernelContext& ctx) {
  if (g_groups.empty()) g_groups.push_back(mpi_init());
  std::vector<int64_t> all(static_cast<size_t>(g_groups[0]->size()));
  for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int64_t>(r);
  g_graph_peers = g_groups[0]->subgroup(all);
  g_world_rank = g_groups[0]->rank();
  g_world_size = g_groups[0]->size();
  runtime::set_process_group(runtime::ProcessGroup{g_world_rank, stream()});
  set_token(ctx);
}

void kernel_finalize(const KernelContext& ctx) {
  runtime::set_process_group(std::nullopt);
  g_graph_peers.reset();
  g_groups.clear();
  mpi_finalize();
  set_token(ctx);
}

void kernel_new_group(const KernelContext& ctx) {
  auto id = static_cast<size_t>(ctx.attr<int64_t>("group"));
  const auto& ranks = ctx.attr<std::vector<int64_t>>("ranks");
  std::unique_ptr<Communicator> sub = g_groups.at(0)->subgroup(ranks);
  if (g_groups.size() <= id) g_groups.resize(id + 1);
  g_groups[id] = std::move(sub);
  set_token(ctx);
}

void kernel_destroy_group(const KernelContext& ctx) {
  auto id = static_cast<size_t>(ctx.attr<int64_t>("group"));
  if (id > 0 && id < g_groups.size()) g_groups[id].reset();
  set_token(ctx);
}

void kernel_barrier(const KernelContext& ctx) {
  finish(group_of(ctx).barrier());
  set_token(ctx);
}

void kernel_all_reduce(const KernelContext& ctx) {
  const TensorArg& t = ctx.outputs[0];
  finish(group_of(ctx).all_reduce(t.data, t.meta->numel, t.meta->dtype, reduce_op(ctx)));
}

void kernel_broadcast(const KernelContext& ctx) {
  const TensorArg& t = ctx.outputs[0];
  finish(group_of(ctx).broadcast(t.data, bytes_of(t), static_cast<int>(ctx.attr<int64_t>("src"))));
}

void kernel_reduce(const KernelContext& ctx) {
  const TensorArg& t = ctx.outputs[0];
  finish(group_of(ctx).reduce(t.data, t.meta->numel, t.meta->dtype, reduce_op(ctx),
                              static_cast<int>(ctx.attr<int64_t>("dst"))));
}

void kernel_all_gather(const KernelContext& ctx) {
  finish(group_of(ctx).all_gather(ctx.inputs[0].data, ctx.outputs[0].data, bytes_of(ctx.inputs[0])));
}

void kernel_reduce_scatter(const KernelContext& ctx) {
  const TensorArg& out = ctx.outputs[0];
  finish(group_of(ctx).reduce_scatter(ctx.inputs[0].data, out.data, out.meta->numel, out.meta->dtype,
                                      reduce_op(ctx)));
}

void kernel_send(const KernelContext& ctx) {
  set_token(ctx);
  finish(group_of(ctx).send(ctx.inputs[0].data, bytes_of(ctx.inputs[0]), static_cast<int>(ctx.attr<int64_t>("dst")),
                            static_cast<int>(ctx.attr<int64_t>("tag"))));
}

void kernel_recv(const KernelContext& ctx) {
  const TensorArg& t = ctx.outputs[0];
  finish(group_of(ctx).recv(t.data, bytes_of(t), static_cast<int>(ctx.attr<int64_t>("src")),
                            static_cast<int>(ctx.attr<int64_t>("tag")), ctx.outputs[1].ptr<int64_t>()));
}

void check_usable(const char* what) {
  RILL_CHECK(!g_forked, Runtime, "[", what, "] this process was forked from one that started rill.distributed; "
             "MPI works only in the processes the launcher started (a DataLoader worker must not communicate)");
  RILL_CHECK(g_initialized.load(std::memory_order_acquire), Runtime, "[", what, "] the default process group is "
             "not initialized; call rill.distributed.init_process_group() first");
}

// Submit op on the comm stream, reading inputs and writing outputs (Note [The comm stream]).
void submit(const char* name, std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::vector<AttrValue> attrs) {
  eager::submit_on(eager::op(name), inputs, {}, make_attrs(std::move(attrs)), outputs, stream());
}

Tensor token() { return eager::empty({1}, DType::kInt64); }

// Submit an op that writes no tensor of the caller's: its output is a token a sync point can wait on.
Tensor submit_token(const char* name, std::vector<Tensor> inputs, std::vector<AttrValue> attrs) {
  Tensor done = token();
  submit(name, std::move(inputs), {done}, std::move(attrs));
  return done;
}

void check_cpu(const Tensor& t, const char* what) {
  RILL_CHECK(t.defined(), Value, "[", what, "] got an undefined tensor");
  RILL_CHECK(t.device().type == DeviceType::kCPU, Runtime, "[", what, "] the MPI backend communicates CPU tensors; "
             "got one on ", t.device().str());
}

// Run an op that writes t in place on a dense t: t itself, or a dense copy copied back afterwards.
template <typename Fn>
void in_place(const Tensor& t, Fn&& fn) {
  if (t.is_contiguous()) {
    fn(t);
    return;
  }
  Tensor dense = eager::contiguous(t);
  fn(dense);
  eager::copy_(t, dense);
}

}  // namespace

Communicator& communicator(int64_t group) {
  auto g = static_cast<size_t>(group);
  RILL_CHECK(g < g_groups.size() && g_groups[g], Value, "[comm] this rank is not in group ", g);
  return *g_groups[g];
}

Communicator& graph_peers() {
  RILL_CHECK(g_graph_peers != nullptr, Runtime, "[comm] the process group is not initialized");
  return *g_graph_peers;
}

vm::Stream stream() {
  vm::Stream s;
  s.role = vm::StreamRole::kComm;
  s.thread_id = g_thread_id;
  return s;
}

void register_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    eager::op("comm_init");  // the registry and the other kernels first
    ops::set_cpu_kernel("comm_init", kernel_init);
    ops::set_cpu_kernel("comm_finalize", kernel_finalize);
    ops::set_cpu_kernel("comm_new_group", kernel_new_group);
    ops::set_cpu_kernel("comm_destroy_group", kernel_destroy_group);
    ops::set_cpu_kernel("comm_barrier", kernel_barrier);
    ops::set_cpu_kernel("comm_all_reduce", kernel_all_reduce);
    ops::set_cpu_kernel("comm_broadcast", kernel_broadcast);
    ops::set_cpu_kernel("comm_reduce", kernel_reduce);
    ops::set_cpu_kernel("comm_all_gather", kernel_all_gather);
    ops::set_cpu_kernel("comm_reduce_scatter", kernel_reduce_scatter);
    ops::set_cpu_kernel("comm_send", kernel_send);
    ops::set_cpu_kernel("comm_recv", kernel_recv);
    register_boxing_kernels();
    fork::on_fork(fork::Stage::kDrain, {nullptr, nullptr, [](void*) {
                    g_forked = true;
                    runtime::set_process_group(std::nullopt);
                  }, nullptr});
  });
}

Tensor init() {
  register_kernels();
  RILL_CHECK(!g_forked, Runtime, "[init_process_group] this process was forked from one that started "
             "rill.distributed; MPI works only in the processes the launcher started");
  if (g_thread_id < 0) g_thread_id = static_cast<int16_t>(vm::reserve_thread_id());
  Tensor done = submit_token("comm_init", {}, {});
  g_initialized.store(true, std::memory_order_release);
  return done;
}

int world_rank() { return g_world_rank; }
int world_size() { return g_world_size; }
bool initialized() { return g_initialized.load(std::memory_order_acquire) && !g_forked; }

Tensor finalize() {
  check_usable("finalize");
  Tensor done = submit_token("comm_finalize", {}, {});
  g_initialized.store(false, std::memory_order_release);
  return done;
}

void abort_job(int code) { mpi_abort(code); }

Tensor new_group(int64_t group, const std::vector<int64_t>& ranks) {
  check_usable("new_group");
  return submit_token("comm_new_group", {}, {ranks, group});
}

Tensor destroy_group(int64_t group) {
  check_usable("destroy_process_group");
  return submit_token("comm_destroy_group", {}, {group});
}

void all_reduce(const Tensor& t, ReduceOp op, int64_t group) {
  check_usable("all_reduce");
  check_cpu(t, "all_reduce");
  in_place(t, [&](const Tensor& d) {
    submit("comm_all_reduce", {d}, {d}, {static_cast<int64_t>(op), group});
  });
}

void broadcast(const Tensor& t, int64_t src, int64_t group) {
  check_usable("broadcast");
  check_cpu(t, "broadcast");
  in_place(t, [&](const Tensor& d) { submit("comm_broadcast", {d}, {d}, {src, group}); });
}

void reduce(const Tensor& t, ReduceOp op, int64_t dst, int64_t group) {
  check_usable("reduce");
  check_cpu(t, "reduce");
  in_place(t, [&](const Tensor& d) {
    submit("comm_reduce", {d}, {d}, {static_cast<int64_t>(op), dst, group});
  });
}

Tensor all_gather(const Tensor& t, int64_t world, int64_t group) {
  check_usable("all_gather");
  check_cpu(t, "all_gather");
  Shape shape{world};
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  Tensor out = eager::empty(shape, t.dtype());
  submit("comm_all_gather", {eager::contiguous(t)}, {out}, {world, group});
  return out;
}

void reduce_scatter(const Tensor& out, const Tensor& input, ReduceOp op, int64_t world, int64_t group) {
  check_usable("reduce_scatter_tensor");
  check_cpu(out, "reduce_scatter_tensor");
  check_cpu(input, "reduce_scatter_tensor");
  RILL_CHECK(out.dtype() == input.dtype(), Type, "[reduce_scatter_tensor] output and input must have one dtype, got ",
             dtype_name(out.dtype()), " and ", dtype_name(input.dtype()));
  RILL_CHECK(input.numel() == out.numel() * world, Value, "[reduce_scatter_tensor] the input must have the group's "
             "size (", world, ") times the output's elements, got ", input.numel(), " and ", out.numel());
  in_place(out, [&](const Tensor& d) {
    submit("comm_reduce_scatter", {eager::contiguous(input)}, {d}, {static_cast<int64_t>(op), world, group});
  });
}

Tensor send(const Tensor& t, int64_t dst, int64_t tag, int64_t group) {
  check_usable("send");
  check_cpu(t, "send");
  return submit_token("comm_send", {eager::contiguous(t)}, {dst, tag, group});
}

Tensor recv(const Tensor& t, int64_t src, int64_t tag, int64_t group) {
  check_usable("recv");
  check_cpu(t, "recv");
  Tensor source = token();
  in_place(t, [&](const Tensor& d) { submit("comm_recv", {}, {d, source}, {src, tag, group}); });
  return source;
}

Tensor barrier(int64_t group) {
  check_usable("barrier");
  return submit_token("comm_barrier", {}, {group});
}

}  // namespace rill::comm
