// Shape ops in the functional API: cat, tril/triu and the diagonal view, and
// compositions of views, cat and index_select, recorded piece by piece: stack
// is cat of unsqueezed inputs, repeat a reshape of an expanded view, flip and
// roll select along each dim with a reversed or rotated arange, diag writes
// into or reads a diagonal view.
#include "rill/eager/functional.h"
#include "rill/ops/view.h"

namespace rill::eager {
namespace {

Tensor int_range(int64_t start, int64_t end, int64_t step = 1) {
  return eager::arange(Scalar(start), Scalar(end), Scalar(step), DType::kInt64);
}

void check_dim_list(const std::vector<int64_t>& dims, int64_t ndim, const char* op, std::vector<int64_t>& out) {
  std::vector<bool> seen(std::max<int64_t>(ndim, 1), false);
  for (int64_t d : dims) {
    const int64_t n = normalize_dim(d, ndim, op);
    RILL_CHECK(!seen[n], Runtime, "[", op, "] dim ", n, " appears multiple times in the list of dims");
    seen[n] = true;
    out.push_back(n);
  }
}

}  // namespace


Tensor cat(std::span<const Tensor> tensors, int64_t dim) {
  static const OpSchema& op = eager::op("cat");
  return call1(op, tensors, {}, make_attrs({dim}));
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool upper) {
  static const OpSchema& tril = eager::op("tril");
  static const OpSchema& triu = eager::op("triu");
  return call1(upper ? triu : tril, {&x, 1}, {}, make_attrs({diagonal}));
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  static const OpSchema& op = eager::op("diagonal");
  return view_call(op, x, make_attrs({offset, dim1, dim2}));
}

Tensor stack(std::span<const Tensor> tensors, int64_t dim) {
  RILL_CHECK(!tensors.empty(), Runtime, "[stack] expects a non-empty TensorList");
  for (size_t i = 1; i < tensors.size(); ++i)
    RILL_CHECK(tensors[i].shape() == tensors[0].shape(), Runtime, "[stack] stack expects each tensor to be equal "
               "size, but got ", shape_str(tensors[0].shape()), " at entry 0 and ", shape_str(tensors[i].shape()),
               " at entry ", i);
  dim = normalize_dim(dim, tensors[0].ndim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, dim));
  return cat(parts, dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  RILL_CHECK(x.ndim() > 0, Runtime, "[split] expects at least a 1-dimensional tensor");
  dim = normalize_dim(dim, x.ndim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    RILL_CHECK(s >= 0, Runtime, "[split_with_sizes] expects split_sizes have only non-negative entries, but got "
               "split_sizes=", shape_str(sizes));
    total += s;
  }
  RILL_CHECK(total == x.shape()[dim], Runtime, "[split_with_sizes] expects split_sizes to sum exactly to ",
             x.shape()[dim], " (input tensor's size at dimension ", dim, "), but got split_sizes=", shape_str(sizes));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  RILL_CHECK(x.ndim() > 0, Runtime, "[split] expects at least a 1-dimensional tensor");
  dim = normalize_dim(dim, x.ndim(), "split");
  RILL_CHECK(split_size >= 0, Runtime, "[split] split expects split_size be non-negative, but got split_size=",
             split_size);
  const int64_t size = x.shape()[dim];
  RILL_CHECK(split_size != 0 || size == 0, Runtime, "[split] split_size can only be 0 if dimension size is 0, but "
             "got dimension size of ", size);
  std::vector<int64_t> sizes;
  if (split_size == 0) {
    sizes.push_back(0);
  } else {
    for (int64_t start = 0; start < size; start += split_size) sizes.push_back(std::min(split_size, size - start));
    if (sizes.empty()) sizes.push_back(0);
  }
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  RILL_CHECK(x.ndim() > 0, Runtime, "[chunk] expects at least a 1-dimensional tensor");
  RILL_CHECK(chunks > 0, Runtime, "[chunk] expects `chunks` to be greater than 0, got: ", chunks);
  dim = normalize_dim(dim, x.ndim(), "chunk");
  const int64_t size = x.shape()[dim];
  const int64_t split_size = (size + chunks - 1) / chunks;
  if (split_size == 0 && size == 0) return split_with_sizes(x, std::vector<int64_t>(chunks, 0), dim);
  return split(x, split_size, dim);
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) {
  RILL_CHECK(!sizes.empty(), Runtime, "[unflatten] sizes must be non-empty");
  dim = normalize_dim(dim, x.ndim(), "unflatten");
  RILL_CHECK(x.ndim() > 0, Runtime, "[unflatten] cannot unflatten a 0-dim tensor");
  Shape inner = view::infer_size(sizes, x.shape()[dim], "unflatten");
  Shape shape(x.shape().begin(), x.shape().begin() + dim);
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), x.shape().begin() + dim + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor movedim(const Tensor& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
  const int64_t n = x.ndim();
  RILL_CHECK(source.size() == destination.size(), Runtime, "[movedim] Invalid source or destination dims: source (",
             shape_str(source), " dims) should contain the same number of dims as destination (",
             shape_str(destination), " dims)");
  std::vector<int64_t> src, dst;
  check_dim_list(source, n, "movedim", src);
  check_dim_list(destination, n, "movedim", dst);
  if (n == 0) return view(x, x.shape());
  std::vector<int64_t> order(n, -1);
  std::vector<bool> moved(n, false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[dst[i]] = src[i];
    moved[src[i]] = true;
  }
  int64_t next = 0;
  for (int64_t& o : order) {
    if (o >= 0) continue;
    while (moved[next]) ++next;
    o = next++;
  }
  return permute(x, order);
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  RILL_CHECK(static_cast<int64_t>(repeats.size()) >= x.ndim(), Runtime, "[repeat] Number of dimensions of repeat "
             "dims can not be smaller than number of dimensions of tensor");
  for (int64_t r : repeats)
    RILL_CHECK(r >= 0, Runtime, "[repeat] Trying to create tensor with negative dimension ", r, ": ",
               shape_str(repeats));
  Shape padded(repeats.size() - x.ndim(), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape inter, expanded, final_shape;
  for (size_t d = 0; d < repeats.size(); ++d) {
    inter.insert(inter.end(), {1, padded[d]});
    expanded.insert(expanded.end(), {repeats[d], padded[d]});
    final_shape.push_back(repeats[d] * padded[d]);
  }
  Tensor y = reshape(expand(reshape(x, inter), expanded), final_shape);
  return y.storage() == x.storage() ? clone(y) : y;  // a copy even when every repeat is 1, as in PyTorch
}

Tensor tile(const Tensor& x, std::vector<int64_t> dims) {
  if (static_cast<int64_t>(dims.size()) < x.ndim()) dims.insert(dims.begin(), x.ndim() - dims.size(), 1);
  return repeat(x, dims);
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> ds;
  check_dim_list(dims, x.ndim(), "flip", ds);
  Tensor y = x;
  for (int64_t d : ds) {
    if (x.ndim() == 0 || x.shape()[d] <= 1) continue;
    y = index_select(y, d, int_range(x.shape()[d] - 1, -1, -1));
  }
  return y.is_same(x) ? clone(x) : y;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  RILL_CHECK(!shifts.empty(), Runtime, "[roll] `shifts` required");
  if (dims.empty()) {
    RILL_CHECK(shifts.size() == 1, Runtime, "[roll] shifts and dimensions must align. shifts: ", shifts.size(),
               ", dims: 0");
    return reshape(roll(reshape(x, {-1}), shifts, {0}), x.shape());
  }
  RILL_CHECK(shifts.size() == dims.size(), Runtime, "[roll] shifts and dimensions must align. shifts: ",
             shifts.size(), ", dims: ", dims.size());
  Tensor y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_dim(dims[i], x.ndim(), "roll");
    const int64_t n = x.ndim() ? x.shape()[d] : 1;
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    // out[j] = x[(j - s) mod n]
    Tensor parts[2] = {int_range(n - s, n), int_range(0, n - s)};
    y = index_select(y, d, eager::cat(parts, 0));
  }
  return y.is_same(x) ? clone(x) : y;
}

Tensor diag(const Tensor& x, int64_t k) {
  if (x.ndim() == 2) return clone(diagonal(x, k, 0, 1));
  RILL_CHECK(x.ndim() == 1, Runtime, "[diag] Supports 1D or 2D tensors. Got ", x.ndim(), "D");
  const int64_t m = x.shape()[0] + (k < 0 ? -k : k);
  Tensor out = eager::full({m, m}, Scalar(int64_t{0}), x.dtype());
  copy_(diagonal(out, k, 0, 1), x);
  return out;
}

}  // namespace rill::eager
