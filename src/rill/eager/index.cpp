// Indexing in the functional API: PyTorch's advanced indexing (index,
// index_put_, masks) over the index ops on leading dims, gather, scatter and
// nonzero.
//
// Note [Advanced indexing]
// x[indices] (index) takes, per dim of x, an undefined tensor (the whole dim),
// an integer tensor, or a bool/uint8 mask standing for as many dims as it has
// (a 0-dim mask adds a dim of size 1 or 0). Masks become integer tensors
// through nonzero (a sync point, Note [Data-dependent shapes] in
// eager/index.cpp); the integer tensors are broadcast to one shape B. The index
// op works on leading dims, so x is permuted to bring the indexed dims first and
// the result has shape B + the remaining dims. As in PyTorch (and numpy), when
// the indexed dims are adjacent, B then moves back to where they were
// (x[:, i, j] has B in dim 1); when a full dim separates them, B stays first.
// index_put_ takes the same indices, with values broadcast to the shape index
// would return and moved into the permuted frame. Its gradient and index's are
// each other: index's gradient is index_put(accumulate=True) into zeros, so
// repeated indices add up; index_put's gradient for the values is index.
#include "rill/eager/functional.h"

#include "rill/eager/math.h"

namespace rill::eager {
namespace {

// The dims indexed and their integer index tensors, after masks are expanded (Note [Advanced indexing]).
struct Expanded {
  Tensor x;  // x itself, or with a dim added for each 0-dim mask
  std::vector<int64_t> dims;
  std::vector<Tensor> indices;
};

Expanded expand_indices(const Tensor& x, std::span<const Tensor> indices, const char* op) {
  Expanded e{x, {}, {}};
  int64_t d = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    const Tensor& t = indices[i];
    if (!t.defined()) {
      ++d;
      continue;
    }
    const DType dt = t.dtype();
    if (dt == DType::kBool || dt == DType::kUInt8) {
      if (t.ndim() == 0) {
        e.x = unsqueeze(e.x, d);
        Tensor nz = eager::nonzero(eager::reshape(t, {1}));  // (0 or 1, 1)
        e.indices.push_back(eager::select(nz, 1, 0));
        e.dims.push_back(d++);
        continue;
      }
      const int64_t k = t.ndim();
      RILL_CHECK(d + k <= e.x.ndim(), Index, "[", op, "] too many indices for tensor of dimension ", x.ndim());
      for (int64_t j = 0; j < k; ++j)
        RILL_CHECK(t.shape()[j] == e.x.shape()[d + j], Index, "[", op, "] The shape of the mask ",
                   shape_str(t.shape()), " at index ", j, " does not match the shape of the indexed tensor ",
                   shape_str(e.x.shape()), " at index ", d + j);
      Tensor nz = eager::nonzero(t);
      for (int64_t j = 0; j < k; ++j) {
        e.indices.push_back(eager::select(nz, 1, j));
        e.dims.push_back(d++);
      }
      continue;
    }
    RILL_CHECK(dtype_is_integral(dt), Index, "[", op, "] tensors used as indices must be long, int, byte or bool "
               "tensors, got ", dtype_name(dt));
    e.indices.push_back(t);
    e.dims.push_back(d++);
  }
  RILL_CHECK(d <= e.x.ndim(), Index, "[", op, "] too many indices for tensor of dimension ", x.ndim());
  return e;
}

bool adjacent(const std::vector<int64_t>& dims) {
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[0] + static_cast<int64_t>(i)) return false;
  return true;
}

// The permutation bringing dims first (in order), then the others.
std::vector<int64_t> dims_first(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> perm = dims;
  std::vector<bool> used(ndim, false);
  for (int64_t d : dims) used[d] = true;
  for (int64_t d = 0; d < ndim; ++d)
    if (!used[d]) perm.push_back(d);
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// For adjacent indexed dims starting at first: the permutation taking (B, rest) to (rest[:first], B, rest[first:]).
std::vector<int64_t> b_to_first(int64_t nb, int64_t first, int64_t ndim) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < first; ++i) perm.push_back(nb + i);
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t i = nb + first; i < ndim; ++i) perm.push_back(i);
  return perm;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

}  // namespace


std::vector<Tensor> broadcast_indices(std::span<const Tensor> indices) {
  Shape shape;
  for (size_t i = 0; i < indices.size(); ++i) {
    const Tensor& t = indices[i];
    RILL_CHECK(dtype_is_integral(t.dtype()), Index, "[index] tensors used as indices must be long, int, byte or "
               "bool tensors, got ", dtype_name(t.dtype()));
    const Shape& s = t.shape();
    if (i == 0) {
      shape = s;
      continue;
    }
    // Right-aligned broadcast; IndexError (PyTorch's kind) when two sizes differ and neither is 1.
    Shape out(std::max(shape.size(), s.size()));
    for (size_t d = 0; d < out.size(); ++d) {
      const int64_t a = d < out.size() - shape.size() ? 1 : shape[d - (out.size() - shape.size())];
      const int64_t b = d < out.size() - s.size() ? 1 : s[d - (out.size() - s.size())];
      RILL_CHECK(a == b || a == 1 || b == 1, Index, "[index] shape mismatch: indexing tensors could not be "
                 "broadcast together with shapes ", shape_str(shape), ", ", shape_str(s));
      out[d] = a == 1 ? b : a;
    }
    shape = out;
  }
  std::vector<Tensor> out;
  out.reserve(indices.size());
  for (const Tensor& t : indices) {
    Tensor i = to_dtype(t, DType::kInt64);
    out.push_back(i.shape() == shape ? i : expand(i, shape));
  }
  return out;
}

Tensor index_leading(const Tensor& x, std::span<const Tensor> indices) {
  static const OpSchema& op = eager::op("index");
  std::vector<Tensor> in = broadcast_indices(indices);
  in.insert(in.begin(), x);
  return call1(op, in);
}

std::vector<Tensor> index_put_inputs(const Tensor& x, std::span<const Tensor> indices, const Tensor& values) {
  std::vector<Tensor> in = broadcast_indices(indices);
  const int64_t k = static_cast<int64_t>(indices.size());
  RILL_CHECK(k <= x.ndim(), Index, "[index_put] too many indices for tensor of dimension ", x.ndim());
  Shape target = in.empty() ? Shape{} : in[0].shape();
  target.insert(target.end(), x.shape().begin() + k, x.shape().end());
  Tensor v = to_dtype(values, x.dtype());
  // As for copy_, leading size-1 dims beyond the target's rank are dropped (x[idx] = y[None] works).
  while (v.ndim() > static_cast<int64_t>(target.size()) && v.shape()[0] == 1) v = select(v, 0, 0);
  if (v.shape() != target) {
    Shape b = broadcast_shapes(v.shape(), target, "index_put");
    RILL_CHECK(b == target, Runtime, "[index_put] shape mismatch: value tensor of shape ", shape_str(v.shape()),
               " cannot be broadcast to indexing result of shape ", shape_str(target));
    v = expand(v, target);
  }
  in.insert(in.begin(), v);
  in.insert(in.begin(), x);
  return in;
}

Tensor index_put_leading(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate) {
  static const OpSchema& op = eager::op("index_put");
  return call1(op, index_put_inputs(x, indices, values), {}, make_attrs({accumulate}));
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  static const OpSchema& op = eager::op("gather");
  Tensor in[2] = {x, index};
  return call1(op, in, {}, make_attrs({dim}));
}

// Note [Data-dependent shapes]
// Ops whose output shape depends on the data (nonzero, and through it boolean
// masks, masked_select and where(cond); unique) are sync points (docs/architecture.md §3.5):
// the caller waits until the input's producers have run (wait_readable, which
// also raises an error that poisoned it), then reads it on the host, where the
// shape becomes known. These ops compute their result right there, into a fresh
// tensor that no instruction has touched yet, so nothing needs ordering: later
// instructions that read it find it written. Everything after them flows through
// the VM asynchronously again.
Tensor nonzero(const Tensor& x) {
  Tensor c = contiguous(x);
  wait_readable(c);
  const int64_t nd = x.ndim(), n = x.numel();
  std::vector<int64_t> hits;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(c.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      if (static_cast<OpMath<T>>(p[i]) != OpMath<T>(0)) hits.push_back(i);
  });
  const int64_t count = static_cast<int64_t>(hits.size());
  Tensor out = Tensor::empty(make_contiguous_meta({count, nd}, DType::kInt64, x.device()));
  if (count * nd == 0) return out;
  int64_t* o = static_cast<int64_t*>(out.data_ptr());
  for (int64_t r = 0; r < count; ++r) {
    int64_t rest = hits[r];
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[r * nd + d] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
  }
  return out;
}

Tensor index(const Tensor& x, std::span<const Tensor> indices) {
  static const OpSchema& op = eager::op("index");
  Expanded e = expand_indices(x, indices, "index");
  if (e.dims.empty()) return view(e.x, e.x.shape());
  std::vector<int64_t> perm = dims_first(e.dims, e.x.ndim());
  Tensor xp = is_identity(perm) ? e.x : permute(e.x, perm);
  std::vector<Tensor> in = eager::broadcast_indices(e.indices);
  in.insert(in.begin(), xp);
  Tensor y = eager::call1(op, in);
  const int64_t first = e.dims[0];
  if (!adjacent(e.dims) || first == 0) return y;
  const int64_t nb = in[1].ndim();
  return contiguous(permute(y, b_to_first(nb, first, y.ndim())));
}

const Tensor& index_put_(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate) {
  static const OpSchema& op = eager::op("index_put");
  Expanded e = expand_indices(x, indices, "index_put");
  if (e.dims.empty()) {
    if (accumulate) copy_(e.x, add(e.x, values));
    else copy_(e.x, values);
    return x;
  }
  std::vector<int64_t> perm = dims_first(e.dims, e.x.ndim());
  Tensor xp = is_identity(perm) ? e.x : permute(e.x, perm);
  std::vector<Tensor> idx = eager::broadcast_indices(e.indices);
  const Shape& b = idx[0].shape();
  const int64_t nb = static_cast<int64_t>(b.size());
  // The shape x[indices] has, in the caller's frame (Note [Advanced indexing]).
  Shape target = b;
  target.insert(target.end(), xp.shape().begin() + static_cast<int64_t>(idx.size()), xp.shape().end());
  const int64_t first = e.dims[0];
  const bool moved = adjacent(e.dims) && first > 0;
  std::vector<int64_t> to_first = b_to_first(nb, first, static_cast<int64_t>(target.size()));
  Shape user = target;
  if (moved)
    for (size_t i = 0; i < to_first.size(); ++i) user[i] = target[to_first[i]];
  RILL_CHECK(values.dtype() == x.dtype(), Runtime, "[index_put] Index put requires the source and destination "
             "dtypes match, got ", dtype_name(x.dtype()), " for the destination and ", dtype_name(values.dtype()),
             " for the source; convert the values with .to(", dtype_name(x.dtype()), ")");
  Tensor v = values;
  while (v.ndim() > static_cast<int64_t>(user.size()) && v.shape()[0] == 1) v = select(v, 0, 0);
  if (v.shape() != user) {
    Shape bs = broadcast_shapes(v.shape(), user, "index_put");
    RILL_CHECK(bs == user, Runtime, "[index_put] shape mismatch: value tensor of shape ", shape_str(values.shape()),
               " cannot be broadcast to indexing result of shape ", shape_str(user));
    v = expand(v, user);
  }
  if (moved) v = permute(v, inverse(to_first));
  std::vector<Tensor> in = std::move(idx);
  in.insert(in.begin(), v);
  in.insert(in.begin(), xp);
  inplace(op, in, {}, make_attrs({accumulate}));
  return x;
}

Tensor index_put(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate) {
  Tensor y = clone(x);
  index_put_(y, indices, values, accumulate);
  return y;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& idx) {
  RILL_CHECK(idx.ndim() <= 1, Index, "[index_select] Index is supposed to be a vector");
  RILL_CHECK(idx.dtype() == DType::kInt64 || idx.dtype() == DType::kInt32, Runtime,
             "[index_select] Expected dtype int32/int64 for index, got ", dtype_name(idx.dtype()));
  if (x.ndim() == 0) {
    RILL_CHECK(dim == 0 || dim == -1, Index, "[index_select] Dimension out of range (expected to be in range of "
               "[-1, 0], but got ", dim, ")");
    RILL_CHECK(idx.numel() == 1, Index, "[index_select] Index to scalar can have only 1 value, got ", idx.numel(),
               " value(s)");
    return view(index_select(view(x, {1}), 0, idx), Shape{});  // a 0-dim input gives a 0-dim result, as in PyTorch
  }
  dim = normalize_dim(dim, x.ndim(), "index_select");
  std::vector<Tensor> indices(dim + 1);
  indices[dim] = idx.ndim() == 0 ? eager::reshape(idx, {1}) : idx;
  return index(x, indices);
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha,
                 bool inplace) {
  RILL_CHECK(index.ndim() <= 1, Index, "[index_add] Index is supposed to be a vector");
  dim = normalize_dim(dim, x.ndim(), "index_add");
  const int64_t n = index.numel();
  RILL_CHECK(x.ndim() == 0 || source.ndim() == 0 || (source.ndim() == x.ndim() && source.shape()[dim] == n), Index,
             "[index_add] source tensor shape ", shape_str(source.shape()), " must match self ",
             shape_str(x.shape()), " with dimension ", dim, " of size ", n);
  Tensor src = source;
  const bool one = alpha.is_floating() ? alpha.to_double() == 1.0 : alpha.to_int() == 1;
  if (!one) src = mul(src, alpha);
  Tensor base = x.ndim() == 0 ? view(x, {1}) : x;
  std::vector<Tensor> indices(dim + 1);
  indices[dim] = index.ndim() == 0 ? eager::reshape(index, {1}) : index;
  if (inplace) {
    index_put_(base, indices, src.ndim() == 0 && x.ndim() == 0 ? view(src, {1}) : src, true);
    return x;
  }
  Tensor y = clone(base);
  index_put_(y, indices, src.ndim() == 0 && x.ndim() == 0 ? view(src, {1}) : src, true);
  return x.ndim() == 0 ? view(y, {}) : y;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
               bool in_place) {
  static const OpSchema& op = eager::op("scatter");
  Tensor in[3] = {x, index, src};
  RILL_CHECK(reduce != "multiply" || !should_record(in), NotImplemented, "[scatter] the derivative for "
             "reduce='multiply' is not implemented; call it under rill.no_grad()");
  AttrsSym attrs = make_attrs({dim, reduce});
  if (in_place) {
    inplace(op, in, {}, attrs);
    return x;
  }
  return call1(op, in, {}, attrs);
}

Tensor scatter_value(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, const std::string& reduce,
                     bool in_place) {
  Tensor src = eager::expand(eager::full({}, value, x.dtype()), index.shape());
  return scatter(x, dim, index, src, reduce, in_place);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value, bool in_place) {
  RILL_CHECK(mask.dtype() == DType::kBool, Runtime, "[masked_fill] only supports boolean masks, but got mask with "
             "dtype ", dtype_name(mask.dtype()));
  RILL_CHECK(value.ndim() == 0, Runtime, "[masked_fill] only supports a 0-dimensional value tensor, but got tensor "
             "with ", value.ndim(), " dimension(s).");
  Tensor v = to_dtype(value, x.dtype());
  if (!in_place) return where(mask, v, x);
  RILL_CHECK(broadcast_shapes(mask.shape(), x.shape(), "masked_fill_") == x.shape(), Runtime, "[masked_fill_] the "
             "mask of shape ", shape_str(mask.shape()), " can't be broadcast to the tensor's shape ",
             shape_str(x.shape()));
  copy_(x, where(mask, v, x));
  return x;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  RILL_CHECK(mask.dtype() == DType::kBool, Runtime, "[masked_select] expected BoolTensor for mask, got ",
             dtype_name(mask.dtype()));
  Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  Tensor xb = x.shape() == shape ? x : expand(x, shape);
  Tensor mb = mask.shape() == shape ? mask : eager::expand(mask, shape);
  if (shape.empty()) return index(view(xb, {1}), std::vector<Tensor>{eager::reshape(mb, {1})});
  return index(xb, std::vector<Tensor>{mb});
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  RILL_CHECK(indices.dtype() == DType::kInt64, Runtime, "[take_along_dim] dtype of indices should be Long but got ",
             dtype_name(indices.dtype()));
  if (!dim) return gather(reshape(x, {-1}), 0, eager::reshape(indices, {-1}));
  RILL_CHECK(x.ndim() == indices.ndim(), Runtime, "[take_along_dim] input and indices should have the same number "
             "of dimensions, but got ", x.ndim(), " dimensions for input, and ", indices.ndim(),
             " dimensions for indices");
  const int64_t d = normalize_dim(*dim, x.ndim(), "take_along_dim");
  if (x.ndim() == 0) return gather(x, d, indices);
  Shape self_sizes = x.shape();
  self_sizes[d] = indices.shape()[d];
  Shape shape = broadcast_shapes(self_sizes, indices.shape(), "take_along_dim");
  Tensor ib = indices.shape() == shape ? indices : eager::expand(indices, shape);
  shape[d] = x.shape()[d];
  Tensor xb = x.shape() == shape ? x : expand(x, shape);
  return gather(xb, d, ib);
}

std::vector<Tensor> nonzero_tuple(const Tensor& x) {
  Tensor nz = eager::nonzero(x.ndim() == 0 ? eager::reshape(x, {1}) : x);
  std::vector<Tensor> out;
  for (int64_t d = 0; d < nz.shape()[1]; ++d) out.push_back(eager::contiguous(eager::select(nz, 1, d)));
  return out;
}

}  // namespace rill::eager
