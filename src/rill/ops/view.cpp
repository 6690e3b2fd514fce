#include "rill/ops/view.h"

#include <algorithm>

#include "rill/ops/op_schema.h"
#include "rill/util/error.h"

namespace rill::view {
namespace {
ViewResult same_storage(const TensorMeta& m, Shape shape, Strides strides, int64_t offset = 0) {
  return {make_meta(shape, strides, m.dtype, m.device), offset};
}
}  // namespace

Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RILL_CHECK(infer_at < 0, Runtime, "[", op, "] only one dimension can be inferred (-1), got ",
                 shape_str(shape));
      infer_at = static_cast<int>(i);
    } else {
      RILL_CHECK(shape[i] >= 0, Runtime, "[", op, "] invalid shape dimension ", shape[i], " in ",
                 shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    RILL_CHECK(known != 0 && numel % known == 0, Runtime, "[", op, "] shape '", shape_str(shape),
               "' is invalid for input of size ", numel);
    out[infer_at] = numel / known;
  } else {
    RILL_CHECK(known == numel, Runtime, "[", op, "] shape '", shape_str(shape), "' is invalid for input of size ",
               numel);
  }
  return out;
}

std::optional<ViewResult> view(const TensorMeta& m, const Shape& shape_in) {
  Shape shape = infer_size(shape_in, m.numel, "view");
  // The strides are PyTorch's (computeStride), also for size-1 dims where any stride would do, so that
  // x.view(...).stride() matches torch.
  if (m.numel == 0) return same_storage(m, shape, shape == m.shape ? m.strides : contiguous_strides(shape));
  if (m.ndim() == 0) return same_storage(m, shape, Strides(shape.size(), 1));
  // Fast path: with no size-1 dims, a contiguous tensor's strides are row-major and the loop below would
  // give row-major strides too.
  if (m.contiguous && std::find(m.shape.begin(), m.shape.end(), 1) == m.shape.end())
    return same_storage(m, shape, contiguous_strides(shape));
  // Match chunks of old dims that are contiguous among themselves to chunks of new dims.
  Strides new_strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = m.strides.empty() ? 1 : m.strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = m.ndim() - 1; d >= 0; --d) {
    tensor_numel *= m.shape[d];
    if (d == 0 || (m.shape[d - 1] != 1 && m.strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = m.strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return same_storage(m, shape, new_strides);
}

ViewResult transpose(const TensorMeta& m, int64_t d0, int64_t d1) {
  int64_t n = m.ndim();
  d0 = normalize_dim(d0, n, "transpose");
  d1 = normalize_dim(d1, n, "transpose");
  Shape s = m.shape;
  Strides st = m.strides;
  if (n > 0) {
    std::swap(s[d0], s[d1]);
    std::swap(st[d0], st[d1]);
  }
  return same_storage(m, s, st);
}

ViewResult permute(const TensorMeta& m, const std::vector<int64_t>& dims) {
  int64_t n = m.ndim();
  RILL_CHECK(static_cast<int64_t>(dims.size()) == n, Runtime, "[permute] number of dims don't match: the tensor has ",
             n, " dims but ", dims.size(), " were given");
  std::vector<bool> seen(n, false);
  Shape s(n);
  Strides st(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = normalize_dim(dims[i], n, "permute");
    RILL_CHECK(!seen[d], Runtime, "[permute] repeated dim ", dims[i], " in ", shape_str(dims));
    seen[d] = true;
    s[i] = m.shape[d];
    st[i] = m.strides[d];
  }
  return same_storage(m, s, st);
}

ViewResult expand(const TensorMeta& m, const Shape& sizes) {
  int64_t n = static_cast<int64_t>(sizes.size());
  RILL_CHECK(n >= m.ndim(), Runtime, "[expand] the number of sizes provided (", n,
             ") must be greater or equal to the number of dimensions in the tensor (", m.ndim(), ")");
  Shape s(n);
  Strides st(n);
  int64_t lead = n - m.ndim();
  for (int64_t i = n - 1; i >= 0; --i) {
    if (i < lead) {
      RILL_CHECK(sizes[i] >= 0, Runtime, "[expand] -1 is not allowed in a leading, non-existing dimension ", i);
      s[i] = sizes[i];
      st[i] = 0;
      continue;
    }
    int64_t old = m.shape[i - lead];
    int64_t want = sizes[i] == -1 ? old : sizes[i];
    RILL_CHECK(want >= 0, Runtime, "[expand] invalid size ", sizes[i], " at dimension ", i);
    if (old == want) {
      s[i] = old;
      st[i] = m.strides[i - lead];
    } else {
      RILL_CHECK(old == 1, Runtime, "[expand] the expanded size of the tensor (", want,
                 ") must match the existing size (", old, ") at non-singleton dimension ", i,
                 ". Target sizes: ", shape_str(sizes), ". Tensor sizes: ", shape_str(m.shape));
      s[i] = want;
      st[i] = 0;
    }
  }
  return same_storage(m, s, st);
}

ViewResult slice(const TensorMeta& m, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                 int64_t step) {
  RILL_CHECK(m.ndim() > 0, Index, "[slice] cannot slice a 0-dim tensor");
  dim = normalize_dim(dim, m.ndim(), "slice");
  RILL_CHECK(step > 0, Value, "[slice] step must be greater than zero, got ", step);
  int64_t size = m.shape[dim];
  auto clamp = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  int64_t b = start ? clamp(*start) : 0;
  int64_t e = stop ? clamp(*stop) : size;
  int64_t len = e > b ? (e - b + step - 1) / step : 0;
  Shape s = m.shape;
  Strides st = m.strides;
  s[dim] = len;
  st[dim] = m.strides[dim] * step;
  return same_storage(m, s, st, b * m.strides[dim]);
}

ViewResult narrow(const TensorMeta& m, int64_t dim, int64_t start, int64_t length) {
  RILL_CHECK(m.ndim() > 0, Runtime, "[narrow] cannot narrow a 0-dim tensor");
  dim = normalize_dim(dim, m.ndim(), "narrow");
  int64_t size = m.shape[dim];
  RILL_CHECK(start >= -size && start <= size, Index, "[narrow] start (", start, ") is out of range for dimension ",
             dim, " of size ", size);
  if (start < 0) start += size;
  RILL_CHECK(length >= 0 && start + length <= size, Runtime, "[narrow] start (", start, ") + length (", length,
             ") exceeds dimension size (", size, ")");
  return slice(m, dim, start, start + length, 1);
}

ViewResult select(const TensorMeta& m, int64_t dim, int64_t index) {
  RILL_CHECK(m.ndim() > 0, Index, "[select] invalid index of a 0-dim tensor; use tensor.item() to read its value");
  dim = normalize_dim(dim, m.ndim(), "select");
  int64_t size = m.shape[dim];
  RILL_CHECK(index >= -size && index < size, Index, "[select] index ", index, " is out of bounds for dimension ",
             dim, " with size ", size);
  if (index < 0) index += size;
  Shape s = m.shape;
  Strides st = m.strides;
  s.erase(s.begin() + dim);
  st.erase(st.begin() + dim);
  return same_storage(m, s, st, index * m.strides[dim]);
}

ViewResult unsqueeze(const TensorMeta& m, int64_t dim) {
  dim = normalize_dim(dim, m.ndim() + 1, "unsqueeze");
  Shape s = m.shape;
  Strides st = m.strides;
  int64_t stride = dim < m.ndim() ? m.shape[dim] * m.strides[dim] : 1;
  s.insert(s.begin() + dim, 1);
  st.insert(st.begin() + dim, stride);
  return same_storage(m, s, st);
}

ViewResult squeeze(const TensorMeta& m, std::optional<std::vector<int64_t>> dims) {
  std::vector<bool> drop(m.ndim(), false);
  if (dims) {
    for (int64_t d : *dims) {
      if (m.ndim() == 0) {
        normalize_dim(d, 0, "squeeze");
        continue;
      }
      int64_t nd = normalize_dim(d, m.ndim(), "squeeze");
      if (m.shape[nd] == 1) drop[nd] = true;
    }
  } else {
    for (int64_t i = 0; i < m.ndim(); ++i) drop[i] = m.shape[i] == 1;
  }
  Shape s;
  Strides st;
  for (int64_t i = 0; i < m.ndim(); ++i)
    if (!drop[i]) {
      s.push_back(m.shape[i]);
      st.push_back(m.strides[i]);
    }
  return same_storage(m, s, st);
}

ViewResult diagonal(const TensorMeta& m, int64_t offset, int64_t dim1, int64_t dim2) {
  RILL_CHECK(m.ndim() >= 2, Runtime, "[diagonal] expected a tensor with at least 2 dimensions, got ", m.ndim());
  dim1 = normalize_dim(dim1, m.ndim(), "diagonal");
  dim2 = normalize_dim(dim2, m.ndim(), "diagonal");
  RILL_CHECK(dim1 != dim2, Runtime, "[diagonal] diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t size, start = 0;
  if (offset >= 0) {
    size = std::max<int64_t>(std::min(m.shape[dim1], m.shape[dim2] - offset), 0);
    start = offset * m.strides[dim2];
  } else {
    size = std::max<int64_t>(std::min(m.shape[dim1] + offset, m.shape[dim2]), 0);
    start = -offset * m.strides[dim1];
  }
  if (size == 0) start = 0;
  Shape s;
  Strides st;
  for (int64_t i = 0; i < m.ndim(); ++i)
    if (i != dim1 && i != dim2) {
      s.push_back(m.shape[i]);
      st.push_back(m.strides[i]);
    }
  s.push_back(size);
  st.push_back(m.strides[dim1] + m.strides[dim2]);
  return same_storage(m, s, st, start);
}

}  // namespace rill::view

// --- the view ops in the registry ---------------------------------------------------------------

namespace rill {
namespace {

InferResult as_view(const view::ViewResult& v) {
  InferResult r;
  r.outputs = {v.meta};
  r.view_offset = v.offset;
  return r;
}

std::optional<int64_t> optional_int(const InferContext& c, const char* name) {
  const int64_t* v = optional_attr_of<int64_t>(c.op, c.attrs, name);
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

InferResult infer_view(const InferContext& c) {
  auto v = view::view(*c.inputs[0], c.attr<std::vector<int64_t>>("size"));
  RILL_CHECK(v.has_value(), Runtime, "[view] size is not compatible with input tensor's size and stride (at least "
             "one dimension spans across two contiguous subspaces); use .reshape(...) instead");
  return as_view(*v);
}
InferResult infer_transpose(const InferContext& c) {
  return as_view(view::transpose(*c.inputs[0], c.attr<int64_t>("dim0"), c.attr<int64_t>("dim1")));
}
InferResult infer_t(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  RILL_CHECK(x.ndim() <= 2, Runtime, "[t] expects a tensor with <= 2 dimensions, but self is ", x.ndim(),
             "D; use .transpose(dim0, dim1) or .mT");
  return as_view(x.ndim() < 2 ? view::transpose(x, 0, 0) : view::transpose(x, 0, 1));
}
InferResult infer_permute(const InferContext& c) {
  return as_view(view::permute(*c.inputs[0], c.attr<std::vector<int64_t>>("dims")));
}
InferResult infer_expand(const InferContext& c) {
  return as_view(view::expand(*c.inputs[0], c.attr<std::vector<int64_t>>("size")));
}
InferResult infer_slice(const InferContext& c) {
  return as_view(view::slice(*c.inputs[0], c.attr<int64_t>("dim"), optional_int(c, "start"), optional_int(c, "end"),
                             c.attr<int64_t>("step")));
}
InferResult infer_narrow(const InferContext& c) {
  return as_view(view::narrow(*c.inputs[0], c.attr<int64_t>("dim"), c.attr<int64_t>("start"),
                              c.attr<int64_t>("length")));
}
InferResult infer_select(const InferContext& c) {
  return as_view(view::select(*c.inputs[0], c.attr<int64_t>("dim"), c.attr<int64_t>("index")));
}
InferResult infer_unsqueeze(const InferContext& c) {
  return as_view(view::unsqueeze(*c.inputs[0], c.attr<int64_t>("dim")));
}
InferResult infer_squeeze(const InferContext& c) {
  const auto* dims = optional_attr_of<std::vector<int64_t>>(c.op, c.attrs, "dim");
  return as_view(view::squeeze(*c.inputs[0], dims ? std::optional(*dims) : std::nullopt));
}
InferResult infer_diagonal(const InferContext& c) {
  return as_view(view::diagonal(*c.inputs[0], c.attr<int64_t>("offset"), c.attr<int64_t>("dim1"),
                                c.attr<int64_t>("dim2")));
}

InferResult infer_restride(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const auto& size = c.attr<std::vector<int64_t>>("size");
  const auto& stride = c.attr<std::vector<int64_t>>("stride");
  int64_t offset = c.attr<int64_t>("offset");
  RILL_CHECK(size.size() == stride.size(), Runtime, "[restride] ", size.size(), " sizes but ", stride.size(),
             " strides");
  RILL_CHECK(offset >= 0, Runtime, "[restride] offset ", offset, " is negative");
  for (size_t i = 0; i < size.size(); ++i)
    RILL_CHECK(size[i] >= 0 && stride[i] >= 0, Runtime, "[restride] negative size or stride at dim ", i);
  return as_view({make_meta(size, stride, x.dtype, x.device), offset});
}

InferResult infer_as_strided(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const auto& size = c.attr<std::vector<int64_t>>("size");
  const auto& stride = c.attr<std::vector<int64_t>>("stride");
  RILL_CHECK(size.size() == stride.size(), Runtime, "[as_strided] mismatch in length of strides and shape: ",
             size.size(), " sizes but ", stride.size(), " strides");
  for (size_t i = 0; i < size.size(); ++i) {
    RILL_CHECK(size[i] >= 0, Runtime, "[as_strided] size ", size[i], " at dim ", i, " is negative");
    RILL_CHECK(stride[i] >= 0, Runtime, "[as_strided] negative strides are not supported, got ", stride[i],
               " at dim ", i);
  }
  return as_view({make_meta(size, stride, x.dtype, x.device), c.attr<int64_t>("offset")});
}

// x itself: eager mode has no pieces to delay; graph mode gives each piece out delay_num pieces late (Note [The
// delay tick] in runtime/actor.cpp).
InferResult infer_delay_tick(const InferContext& c) {
  const int64_t delay = c.attr<int64_t>("delay_num");
  RILL_CHECK(delay >= 0, Value, "[delay_tick] delay_num must be at least 0, got ", delay);
  return as_view({c.inputs[0], 0});
}

// SBP rules of the views (Note [SBP signatures] in ops/sbp.cpp): a view moves each axis of its input to one axis
// of its output, so a split follows its axis; views are linear, so a summand's view is a summand.
std::vector<SbpSignature> sbp_view(const SbpContext& c) {
  const Shape& in = c.inputs[0]->shape;
  const Shape& out = c.outputs[0]->shape;
  std::vector<int64_t> axis_map(in.size(), -1);
  int64_t before_in = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t before_out = 1;
    for (size_t j = 0; j < out.size(); ++j) {
      if (before_out == before_in && out[j] == in[k]) {
        axis_map[k] = static_cast<int64_t>(j);
        break;
      }
      before_out *= out[j];
    }
    before_in *= in[k];
  }
  return ops::mapped_axes_sbp(axis_map, false);
}

// A view's size on one rank: the output's shape with the split axis divided.
AttrsSym local_sized_view(const SbpContext& c, const SbpSignature& sig, int64_t n) {
  std::vector<AttrValue> values = c.attrs.values;
  auto& size = std::get<std::vector<int64_t>>(values[c.op.attr_index("size")]);
  if (sig.out[0].is_split()) {
    const auto axis = static_cast<size_t>(sig.out[0].axis);
    size[axis] = c.outputs[0]->shape[axis] / n;
  }
  return make_attrs(std::move(values));
}

std::vector<SbpSignature> sbp_permute(const SbpContext& c) {
  const int64_t n = c.inputs[0]->ndim();
  std::vector<int64_t> axis_map(static_cast<size_t>(n));
  if (c.op.name == "permute") {
    const auto& dims = c.attr<std::vector<int64_t>>("dims");
    for (int64_t j = 0; j < n; ++j) axis_map[static_cast<size_t>(normalize_dim(dims[j], n, "permute"))] = j;
  } else {
    int64_t d0 = 0, d1 = n > 1 ? 1 : 0;  // t
    if (c.op.name == "transpose") {
      d0 = normalize_dim(c.attr<int64_t>("dim0"), n, "transpose");
      d1 = normalize_dim(c.attr<int64_t>("dim1"), n, "transpose");
    }
    for (int64_t k = 0; k < n; ++k) axis_map[static_cast<size_t>(k)] = k == d0 ? d1 : k == d1 ? d0 : k;
  }
  return ops::mapped_axes_sbp(axis_map, false);
}

std::vector<SbpSignature> sbp_unsqueeze(const SbpContext& c) {
  const int64_t n = c.inputs[0]->ndim();
  const int64_t dim = normalize_dim(c.attr<int64_t>("dim"), n + 1, "unsqueeze");
  std::vector<int64_t> axis_map(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) axis_map[static_cast<size_t>(k)] = k < dim ? k : k + 1;
  return ops::mapped_axes_sbp(axis_map, false);
}

std::vector<SbpSignature> sbp_expand(const SbpContext& c) {
  const Shape& in = c.inputs[0]->shape;
  const Shape& out = c.outputs[0]->shape;
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> axis_map(in.size(), -1);
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] == out[k + lead] && in[k] != 1) axis_map[k] = static_cast<int64_t>(k + lead);
  return ops::mapped_axes_sbp(axis_map, false);
}

}  // namespace

void register_view_ops() {
  const OpFlags v = {.strided_output = true, .view = true};
  const OpFlags py = {.strided_output = true, .function = true, .method = true, .view = true};
  OpSchema& view = ops::define("view(Tensor self, int[] size) -> Tensor", infer_view, v,
                               "the same elements in another shape");
  view.sbp = sbp_view;
  view.local_attrs = local_sized_view;
  ops::define("transpose(Tensor self, int dim0, int dim1) -> Tensor", infer_transpose, py, "two dims swapped")
      .sbp = sbp_permute;
  ops::define("t(Tensor self) -> Tensor", infer_t, py, "a matrix transposed (fewer dims: the same elements)").sbp =
      sbp_permute;
  ops::define("permute(Tensor self, int[] dims) -> Tensor", infer_permute, v, "the dims reordered").sbp = sbp_permute;
  OpSchema& expand = ops::define("expand(Tensor self, int[] size) -> Tensor", infer_expand, v,
                                 "size-1 dims repeated by a zero stride (-1 keeps a size)");
  expand.sbp = sbp_expand;
  expand.local_attrs = local_sized_view;
  ops::define("slice(Tensor self, int dim, int? start, int? end, int step) -> Tensor", infer_slice, v,
              "start:end:step along dim, with Python's clamping");
  ops::define("narrow(Tensor self, int dim, int start, int length) -> Tensor", infer_narrow, py,
              "length elements from start along dim");
  ops::define("select(Tensor self, int dim, int index) -> Tensor", infer_select, py,
              "one index of dim, dim removed");
  ops::define("unsqueeze(Tensor self, int dim) -> Tensor", infer_unsqueeze, py, "a size-1 dim inserted").sbp =
      sbp_unsqueeze;
  ops::define("squeeze(Tensor self, int[]? dim=None) -> Tensor", infer_squeeze, py, "size-1 dims removed");
  ops::define("diagonal(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", infer_diagonal, py,
              "the diagonal of dims dim1 and dim2, as the last dim");
  // offset is relative to self's element 0 (the binding turns torch's storage_offset into it and checks that
  // the view stays inside self's storage).
  ops::define("as_strided(Tensor self, int[] size, int[] stride, int offset) -> Tensor", infer_as_strided, v,
              "self's memory read with the given sizes and strides, offset elements from self's element 0");
  // Graph mode's tracer reads a tensor it did not see being made (a detach(), a view of memory written since)
  // as this view of the memory's whole tensor (Note [Tracing memory] in graph/tracer.cpp).
  ops::define("restride(Tensor self, int[] size, int[] stride, int offset) -> Tensor", infer_restride,
              {.strided_output = true, .differentiable = false, .view = true},
              "the same memory read with other sizes and strides, offset elements from self's element 0");
  // rill.experimental.delay_tick (python/rill/experimental.py).
  ops::define("_delay_tick(Tensor self, int delay_num) -> Tensor", infer_delay_tick,
              {.strided_output = true, .function = true, .view = true},
              "self; in graph mode each micro-batch's value is given out delay_num micro-batches late");
}

}  // namespace rill
