// The kernels of the graph boxing ops (ops/boxing.cpp). They run inside a graph launch on the comm thread (Note
// [Graphs that communicate] in runtime/compiled_graph.cpp), so each collective is called and finished here: an
// actor's act is done when its kernel returns.
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "rill/comm/collectives.h"
#include "rill/ops/cast_into.h"
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"

namespace rill::comm {
namespace {

int64_t itemsize(const TensorArg& t) { return static_cast<int64_t>(dtype_itemsize(t.meta->dtype)); }
int64_t bytes_of(const TensorArg& t) { return t.meta->numel * itemsize(t); }

/** Copy t's elements, in row-major order, into dst (t may have any strides: the cast kernel makes it dense). */
void pack(const TensorArg& t, char* dst) {
  if (t.meta->contiguous) {
    std::memcpy(dst, t.data, static_cast<size_t>(bytes_of(t)));
    return;
  }
  const MetaSym dense = make_contiguous_meta(t.meta->shape, t.meta->dtype, t.meta->device);
  ops::cast_into(t, TensorArg{dst, dense.get()});
}

/** Wait for a request (null: done already). */
void finish_now(std::unique_ptr<Request> r) {
  while (r && !r->test()) {
  }
}

/** Rows of the dims before dim, and bytes of one of dim's slices inside a row, for shape split in `parts`. */
std::pair<int64_t, int64_t> blocks(const Shape& shape, size_t dim, int64_t parts, int64_t itemsize) {
  int64_t outer = 1, inner = itemsize;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim; d < shape.size(); ++d) inner *= shape[d];
  return {outer, inner / parts};
}

void kernel_all_reduce(const KernelContext& c) {
  const TensorArg& out = c.outputs[0];
  pack(c.inputs[0], out.ptr<char>());
  finish_now(communicator(c.attr<int64_t>("group")).all_reduce(out.data, out.meta->numel, out.meta->dtype,
                                                                ReduceOp::kSum));
}

// Gathered in rank order into [world, *local], then each rank's slice put at its place along dim.
void kernel_all_gather(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  const TensorArg& out = c.outputs[0];
  const int64_t world = c.attr<int64_t>("world"), bytes = bytes_of(in);
  const auto dim = static_cast<size_t>(c.attr<int64_t>("dim"));
  std::vector<char> local(static_cast<size_t>(bytes));
  pack(in, local.data());
  Communicator& group = communicator(c.attr<int64_t>("group"));
  if (dim == 0) {
    finish_now(group.all_gather(local.data(), out.data, bytes));
    return;
  }
  std::vector<char> gathered(static_cast<size_t>(bytes * world));
  finish_now(group.all_gather(local.data(), gathered.data(), bytes));
  auto [outer, slice] = blocks(in.meta->shape, dim, 1, itemsize(in));
  char* dst = out.ptr<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < world; ++r)
      std::memcpy(dst + (o * world + r) * slice, gathered.data() + r * bytes + o * slice,
                  static_cast<size_t>(slice));
}

// Each rank's slice along dim made contiguous, in rank order, then reduced and scattered.
void kernel_reduce_scatter(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  const TensorArg& out = c.outputs[0];
  const int64_t world = c.attr<int64_t>("world"), bytes = bytes_of(in);
  const auto dim = static_cast<size_t>(c.attr<int64_t>("dim"));
  std::vector<char> full(static_cast<size_t>(bytes)), chunks;
  pack(in, full.data());
  const char* send = full.data();
  if (dim != 0) {
    chunks.resize(full.size());
    auto [outer, slice] = blocks(in.meta->shape, dim, world, itemsize(in));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < world; ++r)
        std::memcpy(chunks.data() + r * (bytes / world) + o * slice, full.data() + (o * world + r) * slice,
                    static_cast<size_t>(slice));
    send = chunks.data();
  }
  finish_now(communicator(c.attr<int64_t>("group")).reduce_scatter(send, out.data, out.meta->numel,
                                                                    out.meta->dtype, ReduceOp::kSum));
}

// Note [Graph transfers]
// A value crossing placements (a pipeline's activation or gradient) is a send task on each source rank and a
// receive task on each destination rank, one piece per act, matched by a tag per edge on a communicator of their
// own (graph_peers). Each task has a thread of its own (OpFlags::waits_for_peer: the compiler gives it its own
// stream), so a transfer waiting for its peer holds no other actor: the rank goes on computing the pieces it can,
// which is what lets the stages of a pipeline overlap. MPI is then called from several threads at once, which
// needs MPI_THREAD_MULTIPLE (Open MPI has it).
// A transfer thread waits for its peer by testing, then sleeping a little (Open MPI's own waits spin: a pipeline's
// transfer threads, two per edge and stage, would take the cores from the compute threads they wait for).
void wait_for_peer(std::unique_ptr<Request> r) {
  for (int k = 0; r && !r->test(); ++k)
    if (k > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void check_threads(const KernelContext& c) {
  RILL_CHECK(mpi_thread_multiple(), Runtime, "[", c.op.name, "] a graph over several placements needs an MPI with "
             "MPI_THREAD_MULTIPLE, and this one was started without it");
}

void kernel_send(const KernelContext& c) {
  check_threads(c);
  const TensorArg& in = c.inputs[0];
  std::vector<char> dense;
  const void* data = in.data;
  if (!in.meta->contiguous) {
    dense.resize(static_cast<size_t>(bytes_of(in)));
    pack(in, dense.data());
    data = dense.data();
  }
  wait_for_peer(graph_peers().send(data, bytes_of(in), static_cast<int>(c.attr<int64_t>("dst")),
                                   static_cast<int>(c.attr<int64_t>("tag"))));
  *c.outputs[0].ptr<int64_t>() = 1;
}

void kernel_recv(const KernelContext& c) {
  check_threads(c);
  const TensorArg& out = c.outputs[0];
  int64_t source = 0;
  wait_for_peer(graph_peers().recv(out.data, bytes_of(out), static_cast<int>(c.attr<int64_t>("src")),
                                   static_cast<int>(c.attr<int64_t>("tag")), &source));
}

void kernel_partial(const KernelContext& c) {
  const TensorArg& out = c.outputs[0];
  if (c.attr<bool>("keep")) {
    pack(c.inputs[0], out.ptr<char>());
  } else {
    std::memset(out.data, 0, static_cast<size_t>(bytes_of(out)));
  }
}

}  // namespace

void register_boxing_kernels() {
  ops::set_cpu_kernel("_boxing_all_reduce", kernel_all_reduce);
  ops::set_cpu_kernel("_boxing_all_gather", kernel_all_gather);
  ops::set_cpu_kernel("_boxing_reduce_scatter", kernel_reduce_scatter);
  ops::set_cpu_kernel("_boxing_partial", kernel_partial);
  ops::set_cpu_kernel("_boxing_send", kernel_send);
  ops::set_cpu_kernel("_boxing_recv", kernel_recv);
}

}  // namespace rill::comm
