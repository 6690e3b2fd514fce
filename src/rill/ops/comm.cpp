// The collective and point-to-point ops of rill.distributed. comm/collectives.cpp builds their instructions
// on the comm stream and registers their kernels (comm/mpi.cpp makes the calls); each op writes the buffers
// its outputs name: `self` in place for all_reduce, broadcast, reduce and recv, a fresh buffer for the
// gathers, and a one-element int64 token for the ops that write no tensor (a sync point waits on it).
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// The output describes self itself: these ops write it in place.
InferResult infer_in_place(const InferContext& ctx) { return {{ctx.inputs[0]}, {}}; }

InferResult infer_token(const InferContext& ctx) { return {{make_contiguous_meta({1}, DType::kInt64, ctx.inputs.empty() ? Device{} : ctx.inputs[0]->device)}, {}}; }

InferResult infer_recv(const InferContext& ctx) {
  return {{ctx.inputs[0], make_contiguous_meta({1}, DType::kInt64, ctx.inputs.empty() ? Device{} : ctx.inputs[0]->device)}, {}};
}

// [world, *self.shape]: every rank's self, in rank order.
InferResult infer_gathered(const InferContext& ctx) {
  const TensorMeta& m = *ctx.inputs[0];
  Shape shape{ctx.attr<int64_t>("world")};
  shape.insert(shape.end(), m.shape.begin(), m.shape.end());
  return {{make_contiguous_meta(shape, m.dtype, m.device)}, {}};
}

// self's rows [rank * n / world, (rank + 1) * n / world): this rank's share of the reduction.
InferResult infer_scattered(const InferContext& ctx) {
  const TensorMeta& m = *ctx.inputs[0];
  int64_t world = ctx.attr<int64_t>("world");
  RILL_CHECK(!m.shape.empty() && m.shape[0] % world == 0, Value, "[reduce_scatter_tensor] the input's first "
             "dimension (", m.shape.empty() ? 0 : m.shape[0], ") must be a multiple of the group's size ", world);
  Shape shape = m.shape;
  shape[0] /= world;
  return {{make_contiguous_meta(shape, m.dtype, m.device)}, {}};
}

}  // namespace

void register_comm_ops() {
  OpFlags comm;
  comm.differentiable = false;
  ops::define("comm_init() -> Tensor", infer_token, comm, "start the communication library; writes the world size");
  ops::define("comm_finalize() -> Tensor", infer_token, comm, "shut the communication library down");
  ops::define("comm_new_group(int[] ranks, int group) -> Tensor", infer_token, comm,
              "make group `group` of the world's ranks `ranks` (collective over the world)");
  ops::define("comm_destroy_group(int group) -> Tensor", infer_token, comm, "free group `group`");
  ops::define("comm_barrier(int group) -> Tensor", infer_token, comm, "wait for every rank of the group");
  ops::define("comm_all_reduce(Tensor self, int op, int group) -> Tensor", infer_in_place, comm,
              "reduce self over the group, in place on every rank");
  ops::define("comm_broadcast(Tensor self, int src, int group) -> Tensor", infer_in_place, comm,
              "rank src's self, in place on every rank");
  ops::define("comm_reduce(Tensor self, int op, int dst, int group) -> Tensor", infer_in_place, comm,
              "reduce self over the group into rank dst's self");
  ops::define("comm_all_gather(Tensor self, int world, int group) -> Tensor", infer_gathered, comm,
              "every rank's self, stacked in rank order");
  ops::define("comm_reduce_scatter(Tensor self, int op, int world, int group) -> Tensor", infer_scattered, comm,
              "this rank's share of self reduced over the group");
  ops::define("comm_send(Tensor self, int dst, int tag, int group) -> Tensor", infer_token, comm,
              "send self to rank dst");
  ops::define("comm_recv(Tensor self, int src, int tag, int group) -> (Tensor received, Tensor source)", infer_recv,
              comm, "receive into self from rank src (-1: any); received: self's data, source: the sender's rank");
}

}  // namespace rill
