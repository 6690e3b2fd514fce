// The boxing ops (and _to_global, the request for one inside a traced step): what graph mode inserts between a producer and a consumer whose SBPs differ (Note [Boxing] in
// graph/passes/sbp.cpp). They exist only in lowered jobs, on one rank's shapes; comm/boxing.cpp gives them their
// kernels, the collective ones calling the communicator of their group on the comm thread.
#include "rill/core/sbp.h"
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"

namespace rill {
namespace {

InferResult infer_same(const InferContext& c) {
  const TensorMeta& m = *c.inputs[0];
  return {{make_contiguous_meta(m.shape, m.dtype, m.device)}, {}};
}

// self's dim `dim` times world (gather) or divided by it (scatter).
InferResult infer_resized(const InferContext& c) {
  const TensorMeta& m = *c.inputs[0];
  const int64_t world = c.attr<int64_t>("world");
  const auto dim = static_cast<size_t>(normalize_dim(c.attr<int64_t>("dim"), m.ndim(), c.op.name.c_str()));
  Shape shape = m.shape;
  if (c.op.name == "_boxing_all_gather") {
    shape[dim] *= world;
  } else {
    RILL_CHECK(shape[dim] % world == 0, Value, "[", c.op.name, "] dim ", dim, " of size ", shape[dim],
               " does not split evenly over ", world, " ranks");
    shape[dim] /= world;
  }
  return {{make_contiguous_meta(shape, m.dtype, m.device)}, {}};
}

// x itself (a view): the SBP and placement it asks for are the graph's to give it (Note [Boxing]).
InferResult infer_to_global(const InferContext& c) {
  parse_nd(c.attr<std::string>("sbp"));  // a ValueError for a bad spelling
  return {{c.inputs[0]}, {}, false, 0};
}

InferResult infer_token(const InferContext&) { return {{make_contiguous_meta({1}, DType::kInt64, Device{})}, {}}; }

InferResult infer_received(const InferContext& c) {
  return {{make_contiguous_meta(c.attr<std::vector<int64_t>>("shape"), c.attr<DType>("dtype"), Device{})}, {}};
}

}  // namespace

void register_boxing_ops() {
  OpFlags comm;
  comm.differentiable = false;
  comm.collective = true;
  OpFlags local;
  local.differentiable = false;
  ops::define("_boxing_all_reduce(Tensor self, int group) -> Tensor", infer_same, comm,
              "P -> B: the sum of every rank's self");
  ops::define("_boxing_all_gather(Tensor self, int dim, int world, int group) -> Tensor", infer_resized, comm,
              "S(dim) -> B: every rank's self, concatenated along dim in rank order");
  ops::define("_boxing_reduce_scatter(Tensor self, int dim, int world, int group) -> Tensor", infer_resized, comm,
              "P -> S(dim): this rank's slice along dim of the sum of every rank's self");
  ops::define("_boxing_partial(Tensor self, bool keep) -> Tensor", infer_same, local,
              "B -> P: self on the placement's first rank (keep), zeros on the others");
  ops::define("_to_global(Tensor self, str sbp, int[] placement, int group, int[] mesh=[], int[] dim_groups=[]) -> "
              "Tensor", infer_to_global, {.strided_output = true, .function = true, .view = true},
              "x.to_global(placement, sbp) inside nn.Graph.build: self, boxed to sbp (on placement's ranks, group "
              "group, and mesh with its dim_groups; none: where self is) by the graph");
  OpFlags transfer = comm;
  transfer.collective = false;
  transfer.waits_for_peer = true;
  ops::define("_boxing_send(Tensor self, int dst, int tag) -> Tensor", infer_token, transfer,
              "self to world rank dst, one piece per act (a value crossing placements); a token out");
  ops::define("_boxing_recv(int src, int tag, int[] shape, ScalarType dtype) -> Tensor", infer_received, transfer,
              "a value from world rank src, one piece per act");
}

}  // namespace rill
