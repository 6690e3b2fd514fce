// Sorting ops: sort (values and int64 indices along one dim). argsort, topk and
// kthvalue are composite ops built on it (Note [Composite ops] in ops/reduce.cpp): their
// forward is a sort and views of it (eager/sort.cpp), recorded as those pieces, so their
// gradients are sort's (autograd/sort.cpp); unique is a sync point computed on the host
// (eager/sort.cpp).
//
// Attrs: sort [dim: int, descending: bool, stable: bool]; argsort [dim: int, descending: bool]; argsort_stable
// [stable: bool, dim: int, descending: bool];
// topk [k: int, dim: int, largest: bool, sorted: bool]; kthvalue [k: int, dim: int, keepdim: bool]. NaN sorts
// above every number, as in PyTorch.
#include <string>

#include "rill/ops/op_schema.h"

namespace rill {
namespace {

InferResult infer_sort(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  normalize_dim(c.attrs.get_int(0), x.ndim(), "sort");
  return {{make_contiguous_meta(x.shape, x.dtype, x.device), make_contiguous_meta(x.shape, DType::kInt64, x.device)},
          {}};
}

// argsort: the indices of a sort; topk: k values along dim; kthvalue: one value along dim (kept as 1 with keepdim).
InferResult infer_sort_part(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const int64_t d = normalize_dim(c.attr<int64_t>("dim"), x.ndim(), name.c_str());
  if (name.starts_with("argsort")) return {{make_contiguous_meta(x.shape, DType::kInt64, x.device)}, {}};
  const int64_t size = x.ndim() ? x.shape[d] : 1, k = c.attr<int64_t>("k");
  Shape shape = x.shape;
  if (name == "topk") {
    RILL_CHECK(k >= 0 && k <= size, Runtime, "[topk] selected index k out of range: k = ", k, " for a dim of size ",
               size);
    if (x.ndim()) shape[d] = k;
  } else {
    RILL_CHECK(k >= 1 && k <= size, Runtime, "[kthvalue] kthvalue(): selected number k out of range for dimension ",
               d);
    if (x.ndim() && c.attr<bool>("keepdim")) shape[d] = 1;
    else if (x.ndim()) shape.erase(shape.begin() + d);
  }
  return {{make_contiguous_meta(shape, x.dtype, x.device), make_contiguous_meta(shape, DType::kInt64, x.device)}, {}};
}

}  // namespace

void register_sort_ops() {
  const OpFlags py = {.function = true, .method = true};
  ops::define("sort(Tensor self, int dim=-1, bool descending=False, bool stable=False) -> (Tensor values, Tensor "
              "indices)", infer_sort, py, "values sorted along dim, and their indices");
  const OpFlags composite = {.composite = true, .function = true, .method = true};
  OpFlags indices = composite;
  indices.differentiable = false;
  // PyTorch's argsort and argsort.stable, whose arguments are all keywords (Note [Overloads] in
  // python/src/schema_bindings.cpp): argsort(x, 0, stable=True) fits neither.
  ops::define("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", infer_sort_part, indices,
              "the indices that sort self along dim");
  OpFlags indices_out = indices;
  indices_out.out = true;
  ops::define("argsort_stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
              infer_sort_part, indices_out, "the indices that sort self along dim, stably when stable").overload_of =
      "argsort";
  ops::define("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor "
              "indices)", infer_sort_part, composite, "the k largest (smallest) values along dim, sorted, and their "
              "indices");
  ops::define("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
              infer_sort_part, composite, "the k-th smallest value along dim and its index");
}

}  // namespace rill
