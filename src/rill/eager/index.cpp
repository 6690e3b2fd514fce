// Indexing in the functional API: index and index_put on the leading dims (the
// full advanced-indexing rules live in autograd/index.cpp), gather, scatter and
// nonzero.
#include "rill/eager/functional.h"

namespace rill::eager {

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

Tensor index(const Tensor& x, std::span<const Tensor> indices) {
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

Tensor index_put(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate) {
  static const OpSchema& op = eager::op("index_put");
  return call1(op, index_put_inputs(x, indices, values), {}, make_attrs({accumulate}));
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  static const OpSchema& op = eager::op("gather");
  Tensor in[2] = {x, index};
  return call1(op, in, {}, make_attrs({dim}));
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) {
  static const OpSchema& op = eager::op("scatter");
  Tensor in[3] = {x, index, src};
  return call1(op, in, {}, make_attrs({dim, reduce}));
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

}  // namespace rill::eager
