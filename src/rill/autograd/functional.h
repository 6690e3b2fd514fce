// The differentiable functional API: the eager functional API (eager/functional.h)
// plus recording. Each function runs the eager op, then, when grad mode is on and
// an input requires grad, attaches a backward node to the floating-point outputs.
// The Python bindings call these, never eager:: directly, for anything a
// gradient can flow through.
#pragma once

#include <optional>
#include <string>
#include <span>
#include <vector>

#include "rill/autograd/grad_mode.h"
#include "rill/eager/functional.h"

namespace rill::autograd {

/** True when an op on inputs must be recorded: grad mode is on and one of them requires grad. */
bool should_record(std::span<const Tensor> inputs);
/** Attach a backward node for op(inputs, scalars, attrs) -> outputs (computed already); node_name, when
 * given, replaces the rule's name. Raises NotImplementedError for a differentiable op without a rule. */
void record(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
            std::span<const Tensor> outputs, const char* node_name = nullptr);

/** eager::call, recorded. */
std::vector<Tensor> call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
                         AttrsSym attrs = empty_attrs());
/** eager::call1, recorded. */
Tensor call1(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
             AttrsSym attrs = empty_attrs());

// --- math -------------------------------------------------------------------------------
/** Unary op (neg, abs, relu, exp, ...). */
Tensor unary(const OpSchema& op, const Tensor& x);
/** Binary op on two tensors. */
Tensor binary(const OpSchema& op, const Tensor& a, const Tensor& b);
/** Binary op with a Python number. */
Tensor binary_scalar(const OpSchema& op, const Tensor& a, Scalar b);
/** where(cond, a, b). */
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/** Reductions (see eager::reduce). */
Tensor reduce(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
              std::optional<DType> dtype = std::nullopt);
/** max/min over one dim: (values, indices). */
std::pair<Tensor, Tensor> reduce_with_indices(const OpSchema& op, const Tensor& x, int64_t dim, bool keepdim);
/** var / std over dims (see eager::moment). */
Tensor moment(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, double correction,
              bool keepdim);
/** cumsum / cumprod along dim, converting x to dtype first when given. */
Tensor scan(const OpSchema& op, const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/** logsumexp over dims, recorded as one node (Note [Composite ops] in ops/reduce.cpp). */
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** The vector ord-norm over dims, recorded as one node (Note [Composite ops] in ops/reduce.cpp). */
Tensor norm(const Tensor& x, double ord, const std::vector<int64_t>& dims, bool keepdim,
            std::optional<DType> dtype = std::nullopt);
/** matmul (1-D, 2-D, batched, broadcast). */
Tensor matmul(const Tensor& a, const Tensor& b);

// --- conversions, copies and in-place writes --------------------------------------------
/** x converted to dtype (x itself when it already has it). */
Tensor to_dtype(const Tensor& x, DType dtype);
/** A dense copy of x. */
Tensor clone(const Tensor& x);
/** x when dense, else a dense copy. */
Tensor contiguous(const Tensor& x);
/** A tensor sharing x's memory (and version counter) with no history; never requires grad. */
Tensor detach(const Tensor& x);
/** Make x a leaf that does not require grad. */
void detach_(const Tensor& x);
/** inputs[0] op= inputs[1:]: runs op writing its result into inputs[0], then records it (Note [Views and
 * in-place] in node.h). Returns inputs[0]. */
const Tensor& inplace(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
                      AttrsSym attrs = empty_attrs());
/** Copy src (broadcast, converted) into dst; returns dst. */
const Tensor& copy_(const Tensor& dst, const Tensor& src);
/** Fill dst with value; returns dst. */
const Tensor& fill_(const Tensor& dst, Scalar value);

// --- views (no instruction; each records a node mapping its gradient back) ----------------
/** view(shape): ViewBackward0. */
Tensor view(const Tensor& x, const Shape& shape);
/** A view when the strides allow it, else a recorded clone viewed. */
Tensor reshape(const Tensor& x, const Shape& shape);
/** transpose(dim0, dim1); node_name: "TBackward0" for t(). */
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, const char* node_name = "TransposeBackward0");
/** permute(dims): the gradient is permuted back. */
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
/** expand(sizes): the gradient is summed over the expanded dims. */
Tensor expand(const Tensor& x, const Shape& sizes);
/** slice(dim, start, stop, step): the gradient is written into zeros of x's shape. */
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step);
/** narrow(dim, start, length). */
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/** select(dim, index). */
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/** unsqueeze(dim). */
Tensor unsqueeze(const Tensor& x, int64_t dim);
/** squeeze() / squeeze(dims). */
Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims);
/** flatten(start_dim, end_dim) (x itself when start_dim == end_dim, as in PyTorch). */
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim);

// --- nn: convolution and pooling (autograd/conv.cpp; arguments as in eager/functional.h) ---
/** conv2d, recorded (ConvolutionBackward0). */
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups);
/** conv1d, recorded. */
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups);
/** conv_transpose2d, recorded. */
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation);
/** max_pool2d's values, recorded (MaxPool2DBackward0, which saves the workspace). */
Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode);
/** max_pool2d with indices (return_indices=True), recorded (the indices get no gradient). */
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const std::vector<int64_t>& kernel_size,
                                                  const std::vector<int64_t>& stride,
                                                  const std::vector<int64_t>& padding,
                                                  const std::vector<int64_t>& dilation, bool ceil_mode);
/** avg_pool2d, recorded. */
Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override);
/** adaptive_avg_pool2d, recorded. */
Tensor adaptive_avg_pool2d(const Tensor& input, const std::vector<int64_t>& output_size);

// --- shape ops (shape.cpp): kernels where needed, else views and compositions ---------------
/** cat(tensors, dim) with type promotion. */
Tensor cat(std::span<const Tensor> tensors, int64_t dim);
/** stack(tensors, dim): cat of the tensors unsqueezed at dim. */
Tensor stack(std::span<const Tensor> tensors, int64_t dim);
/** split into pieces of split_size along dim (the last one smaller). */
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim);
/** split into pieces of the given sizes along dim. */
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
/** chunk into (at most) chunks pieces along dim. */
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);
/** unflatten(dim, sizes): dim split into sizes (one may be -1). */
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
/** movedim(source, destination): the dims in source moved to the positions in destination. */
Tensor movedim(const Tensor& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination);
/** repeat(repeats): x tiled repeats[d] times along each dim (a copy). */
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
/** tile(dims): repeat with dims padded with leading 1s. */
Tensor tile(const Tensor& x, std::vector<int64_t> dims);
/** flip(dims): the order of the elements reversed along each of dims. */
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
/** roll(shifts, dims): elements shifted cyclically; dims empty: over the flattened tensor. */
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);
/** tril (upper = false) / triu (upper = true) of the last two dims. */
Tensor triangle(const Tensor& x, int64_t diagonal, bool upper);
/** diag: a 1-D tensor to a matrix with it on a diagonal, or a matrix's diagonal as a 1-D tensor. */
Tensor diag(const Tensor& x, int64_t diagonal);
/** diagonal(offset, dim1, dim2): a view. */
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);

// --- indexing (index.cpp) -------------------------------------------------------------------
/** x[indices] with PyTorch's advanced-indexing rules: indices[i] indexes the next dim (an undefined tensor:
 * all of it), a bool/uint8 mask its next mask.ndim() dims; the indexed dims go first unless adjacent. */
Tensor index(const Tensor& x, std::span<const Tensor> indices);
/** x[indices] = values (accumulate: +=) in place, indices as for index(); returns x. */
const Tensor& index_put_(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate);
/** index_put_ on a copy of x. */
Tensor index_put(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate);
/** index_select(dim, index): index a 1-D (or 0-dim) integer tensor. */
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** index_add(dim, index, source, alpha): x with alpha * source added at index along dim (inplace: into x). */
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha,
                 bool inplace);
/** gather(dim, index). */
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** scatter(dim, index, src, reduce) ("" , "add" or "multiply"); inplace: into x, which is returned. */
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
               bool inplace);
/** scatter(dim, index, value, reduce). */
Tensor scatter_value(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, const std::string& reduce,
                     bool inplace);
/** masked_fill(mask, value) with value a 0-dim tensor; inplace: into x. */
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value, bool inplace);
/** masked_select(mask): the elements where mask (broadcast with x) is true, as a 1-D tensor (a sync point). */
Tensor masked_select(const Tensor& x, const Tensor& mask);
/** take_along_dim(indices, dim); no dim: over the flattened tensor. */
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim);
/** nonzero(as_tuple=True): one 1-D int64 tensor per dim (a sync point). */
std::vector<Tensor> nonzero_tuple(const Tensor& x);

// --- sorting (sort.cpp) ---------------------------------------------------------------------
/** sort(dim, descending, stable): (values, indices); values carry the gradient. */
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable);
/** topk(k, dim, largest, sorted): (values, indices), sorted in every case. */
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted);
/** kthvalue(k, dim, keepdim): the k-th smallest element along dim and its index. */
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim);
// --- nn ---
/** softmax (log: log_softmax) over dim, computed in dtype when given. */
Tensor softmax(const Tensor& x, int64_t dim, bool log, std::optional<DType> dtype = std::nullopt);
/** layer_norm over the trailing dims normalized_shape; weight and bias may be undefined. */
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps);
/** x @ weight^T + bias (bias may be undefined): one op for float32/float64, matmul and add otherwise. */
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
/** weight[indices]; padding_idx (in [0, num_embeddings), or -1 for none) gets no gradient. */
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx);
/** Dropout: x itself when not training or p == 0, else elements zeroed with probability p, the rest scaled. */
Tensor dropout(const Tensor& x, double p, bool training);
/** nll_loss (reduction 0 none, 1 mean, 2 sum): (loss, total_weight); weight may be undefined. */
std::pair<Tensor, Tensor> nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t reduction,
                                   int64_t ignore_index);

}  // namespace rill::autograd
