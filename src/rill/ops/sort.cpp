// Sorting ops: sort (values and int64 indices along one dim). argsort, topk and
// kthvalue are built on it (autograd/sort.cpp); unique is a sync point computed
// on the host (eager/sort.cpp).
//
// Attrs: sort [dim: int, descending: bool, stable: bool]. NaN sorts above every number, as in PyTorch.
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

InferResult infer_sort(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  normalize_dim(c.attrs.get_int(0), x.ndim(), "sort");
  return {{make_contiguous_meta(x.shape, x.dtype, x.device), make_contiguous_meta(x.shape, DType::kInt64, x.device)},
          {}};
}

}  // namespace

void register_sort_ops() {
  ops::define("sort(Tensor self, int dim=-1, bool descending=False, bool stable=False) -> (Tensor values, Tensor "
              "indices)", infer_sort, {.function = true, .method = true}, "values sorted along dim, and their indices");
}

}  // namespace rill
