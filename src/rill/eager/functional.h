// The functional C++ API, the one there is: every op call goes through call(),
// which infers output metas (cached), converts inputs to the dtypes inference
// asks for, creates the outputs, submits one instruction to the VM
// (docs/architecture.md §2) and offers the call to the recorder (Note
// [Recording] in grad_mode.h). Views are computed here without instructions;
// in-place writes go through inplace(). The Python bindings and the gradient
// rules both call these functions.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "rill/core/tensor.h"
#include "rill/eager/grad_mode.h"
#include "rill/ops/op_schema.h"
#include "rill/vm/stream.h"

namespace rill::eager {

/** Run op on inputs; returns its outputs. */
std::vector<Tensor> call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
                         AttrsSym attrs = empty_attrs());
/** Run a single-output op. */
Tensor call1(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
             AttrsSym attrs = empty_attrs());
/** inputs[0] op= inputs[1:]: op's result written into inputs[0], recorded (Note [Views and in-place] in
 * autograd/node.h). Returns inputs[0]. */
const Tensor& inplace(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
                      AttrsSym attrs = empty_attrs());
/** Run an op with OpFlags::updates_in_place (an optimizer update) writing each output over the input it
 * updates (ops::updated_input), as PyTorch's _fused_adam_ does; not recorded, each written tensor's version
 * bumped. Where a written tensor is not dense in the output's dtype or shares memory with another operand, the
 * op runs out of place and its results are copied back. */
void update_in_place(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars = {},
                     AttrsSym attrs = empty_attrs());
/** The outputs of a call of a composite op (no kernel), computed with other ops and recorded once; call() runs
 * it for such an op (Note [Composite ops] in ops/reduce.cpp): logsumexp, norm, argsort, topk, kthvalue. */
std::vector<Tensor> composite_call(const OpSchema& op, std::span<const Tensor> inputs, AttrsSym attrs);
/** Record outputs as one call of a composite op (no kernel: its forward ran as other ops with grad mode off). */
void record_composite(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                      AttrsSym attrs, std::span<const Tensor> outputs);
/** Run a single-output op, writing its result into out (converted to out's dtype); not recorded. */
void call_into(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
               const Tensor& out);
/** Submit op's instruction on stream as it stands: inputs read, outputs written, no inference or conversion
 * (for layers that build their calls themselves, as comm/ does on the comm stream). Memory numpy can also
 * reach makes it finish before returning (Note [Shared memory is synchronous] in functional.cpp). */
void submit_on(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
               std::span<const Tensor> outputs, vm::Stream stream);
/** Look an op up by name (the registry and kernels are set up on first use). */
const OpSchema& op(std::string_view name);

// --- conversions and copies --------------------------------------------------------------
/** x converted to dtype (x itself when it already has it). */
Tensor to_dtype(const Tensor& x, DType dtype);
/** A dense copy of x. */
Tensor clone(const Tensor& x);
/** x when dense, else a dense copy. */
Tensor contiguous(const Tensor& x);
/** Copy src (broadcast, converted) into dst, recorded; returns dst. */
const Tensor& copy_(const Tensor& dst, const Tensor& src);
/** copy_ without recording or a version bump (the write itself, for layers that record it). */
void write_into(const Tensor& dst, const Tensor& src);
/** Fill dst with value (converted to its dtype), recorded; returns dst. */
const Tensor& fill_(const Tensor& dst, Scalar value);
/** fill_ without recording or a version bump (the write itself: creation, layers that record it). */
void write_fill(const Tensor& dst, Scalar value);

// --- creation ---------------------------------------------------------------------------
/** A tensor of shape filled with value. */
Tensor full(const Shape& shape, Scalar value, DType dtype, Device device = {});
/** Uninitialised tensor (memory comes from the caching allocator). */
Tensor empty(const Shape& shape, DType dtype, Device device = {});
/** Values from start to end (exclusive) by step. */
Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype, Device device = {});
/** Uniform [0, 1) samples. */
Tensor rand(const Shape& shape, DType dtype, Device device = {});
/** Standard normal samples. */
Tensor randn(const Shape& shape, DType dtype, Device device = {});
/** Uniform integers in [low, high). */
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device = {});
/** Seed the default generator. */
void manual_seed(uint64_t seed);
/** Seed of the default generator. */
uint64_t initial_seed();

// --- views: registered ops (ops/view.cpp) whose output shares the input's storage; no instruction ----
/** Run a view op (OpFlags::view) on x: its inferred meta and offset over x's storage. */
Tensor view_call(const OpSchema& op, const Tensor& x, AttrsSym attrs);
Tensor view(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor expand(const Tensor& x, const Shape& sizes);
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims);
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim);

// --- math -------------------------------------------------------------------------------
/** Unary op by name (neg, abs, relu, exp, log, sqrt, sigmoid, tanh). */
Tensor unary(const OpSchema& op, const Tensor& x);
/** Binary op on two tensors (add, sub, mul, div, pow, maximum, minimum, eq, ...). */
Tensor binary(const OpSchema& op, const Tensor& a, const Tensor& b);
/** Binary op with a Python number (add_scalar, rsub_scalar, ...). */
Tensor binary_scalar(const OpSchema& op, const Tensor& a, Scalar b);
/** where(cond, a, b). */
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/** Reductions: sum, mean, max, min, amax, amin, argmax, argmin over dims (empty: all). */
Tensor reduce(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
              std::optional<DType> dtype = std::nullopt);
/** max/min over one dim: (values, indices). */
std::pair<Tensor, Tensor> reduce_with_indices(const OpSchema& op, const Tensor& x, int64_t dim, bool keepdim);
/** cumsum / cumprod along dim, in dtype when given. */
Tensor scan(const OpSchema& op, const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/** log(sum(exp(x))) over dims, shifted by the maximum (Note [Composite ops] in ops/reduce.cpp). */
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** The vector ord-norm over dims (empty: all), converting x to dtype first when given. */
Tensor norm(const Tensor& x, double ord, const std::vector<int64_t>& dims, bool keepdim,
            std::optional<DType> dtype = std::nullopt);
/** matmul with numpy/PyTorch semantics (1-D, 2-D, batched, broadcast). */
Tensor matmul(const Tensor& a, const Tensor& b);

// --- nn ---------------------------------------------------------------------------------
// Convolution and pooling (eager/conv.cpp). Inputs may be unbatched (C, H, W) and
// of any layout. An int-or-pair argument takes 1 or 2 values; conv2d padding
// takes 1, 2 (pH, pW) or 4 (top, bottom, left, right) values.

/** PyTorch's padding='same' for kernel sizes and dilation: (before, after) per dim; stride must be 1. */
std::vector<int64_t> conv_padding_same(const Shape& kernel, const std::vector<int64_t>& dilation,
                                       const std::vector<int64_t>& stride, const char* op);
/** torch.nn.functional.conv2d: input (N, C, H, W) * weight (O, C / groups, kH, kW) [+ bias (O)]. */
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of conv2d with respect to its input, of size input_size. */
Tensor conv2d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of conv2d with respect to its weight, of size weight_size. */
Tensor conv2d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of a convolution's bias: grad_output summed over every dim but the channels. */
Tensor conv_backward_bias(const Tensor& grad_output, int64_t spatial_dims);
/** torch.nn.functional.conv1d (conv2d with height 1); padding takes 1 or 2 (left, right) values. */
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of conv1d with respect to its input, of size input_size. */
Tensor conv1d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of conv1d with respect to its weight, of size weight_size. */
Tensor conv1d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups);
/** torch.nn.functional.conv_transpose2d: weight (C_in, C_out / groups, kH, kW). */
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation);
/** Gradient of conv_transpose2d with respect to its input of size input_size (a conv2d of grad_output). */
Tensor conv_transpose2d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                       const std::vector<int64_t>& dilation, int64_t groups);
/** Gradient of conv_transpose2d with respect to its weight (conv2d_backward_weight, roles swapped). */
Tensor conv_transpose2d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                        const std::vector<int64_t>& dilation, int64_t groups);
/** torch.nn.functional.max_pool2d: the values (computed with max_pool2d_with_workspace, whose workspace is
 * what its gradient needs). */
Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode);
/** torch.nn.functional.max_pool2d with return_indices: (values, int64 indices into each H * W plane). */
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const std::vector<int64_t>& kernel_size,
                                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                     const std::vector<int64_t>& dilation, bool ceil_mode);
/** Gradient of max_pool2d: grad_output scattered to indices, in a tensor of size input_size. */
Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Shape& input_size);
/** max_pool2d for autograd: (values, workspace); the workspace only feeds max_pool2d_with_workspace_backward. */
std::pair<Tensor, Tensor> max_pool2d_with_workspace(const Tensor& input, const std::vector<int64_t>& kernel_size,
                                                    const std::vector<int64_t>& stride,
                                                    const std::vector<int64_t>& padding,
                                                    const std::vector<int64_t>& dilation, bool ceil_mode);
/** Gradient of max_pool2d from the workspace of max_pool2d_with_workspace (same window arguments). */
Tensor max_pool2d_with_workspace_backward(const Tensor& grad_output, const Tensor& workspace, const Shape& input_size,
                                          const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                                          const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                                          bool ceil_mode);
/** torch.nn.functional.avg_pool2d; an empty stride means the kernel size. */
Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override);
/** Gradient of avg_pool2d, of size input_size. */
Tensor avg_pool2d_backward(const Tensor& grad_output, const Shape& input_size,
                           const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override);
/** torch.nn.functional.adaptive_avg_pool2d. */
Tensor adaptive_avg_pool2d(const Tensor& input, const std::vector<int64_t>& output_size);
/** Gradient of adaptive_avg_pool2d, of size input_size. */
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Shape& input_size);
// --- shape, indexing and sorting (eager/shape.cpp, eager/index.cpp, eager/sort.cpp) ---------------
/** cat(tensors, dim) with type promotion; 1-D empty tensors are skipped, as in PyTorch. */
Tensor cat(std::span<const Tensor> tensors, int64_t dim);
/** tril (upper = false) or triu (upper = true) of the last two dims. */
Tensor triangle(const Tensor& x, int64_t diagonal, bool upper);
/** diagonal(offset, dim1, dim2): a view of the diagonal, appended as the last dim. */
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);
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
/** diag: a 1-D tensor to a matrix with it on a diagonal, or a matrix's diagonal as a 1-D tensor. */
Tensor diag(const Tensor& x, int64_t diagonal);
/** Integer index tensors broadcast to one shape and converted to int64; IndexError when they don't broadcast. */
std::vector<Tensor> broadcast_indices(std::span<const Tensor> indices);
/** x[i_0, ..., i_k-1] on the leading k dims (integer indices, broadcast together): the index op. */
Tensor index_leading(const Tensor& x, std::span<const Tensor> indices);
/** A copy of x with x[i_0, ..., i_k-1] = values (accumulate: +=) on the leading dims: the index_put op. */
Tensor index_put_leading(const Tensor& x, std::span<const Tensor> indices, const Tensor& values, bool accumulate);
/** The inputs index_put takes for these arguments: x, values expanded and converted, indices broadcast. */
std::vector<Tensor> index_put_inputs(const Tensor& x, std::span<const Tensor> indices, const Tensor& values);
/** x[indices] with PyTorch's advanced-indexing rules (Note [Advanced indexing] in index.cpp): indices[i] indexes
 * the next dim (an undefined tensor: all of it), a bool/uint8 mask its next mask.ndim() dims. */
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
/** gather(x, dim, index). */
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** x with src scattered along dim at index (in_place: into x, which is returned); reduce: "", "add" or
 * "multiply". */
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
               bool in_place = false);
/** scatter(dim, index, value, reduce). */
Tensor scatter_value(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, const std::string& reduce,
                     bool in_place);
/** masked_fill(mask, value) with value a 0-dim tensor; in_place: into x. */
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value, bool in_place);
/** masked_select(mask): the elements where mask (broadcast with x) is true, as a 1-D tensor (a sync point). */
Tensor masked_select(const Tensor& x, const Tensor& mask);
/** take_along_dim(indices, dim); no dim: over the flattened tensor. */
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim);
/** nonzero(as_tuple=True): one 1-D int64 tensor per dim (a sync point). */
std::vector<Tensor> nonzero_tuple(const Tensor& x);
/** Coordinates of the non-zero elements, shape (n, ndim) int64 (a sync point: Note [Data-dependent shapes]). */
Tensor nonzero(const Tensor& x);
/** sort along dim: (values, int64 indices). */
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable);
/** topk(k, dim, largest, sorted): (values, indices), sorted in every case. */
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted);
/** kthvalue(k, dim, keepdim): the k-th smallest element along dim and its index. */
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim);
/** The distinct values of x, sorted, with the inverse map (x's shape) and the counts (a sync point). */
std::vector<Tensor> unique(const Tensor& x);
/** torch.unique(dim=): the distinct slices of x along dim, sorted lexicographically, with the inverse map
 * (x.shape[dim]) and the counts (a sync point). */
std::vector<Tensor> unique_dim(const Tensor& x, int64_t dim);
// --- nn ---
/** (seed, offset) scalars for a random op drawing numel values; advances the default generator. */
std::pair<Scalar, Scalar> take_random(int64_t numel);
/** softmax (log: log_softmax) of x over dim, computed in dtype when given. */
Tensor softmax(const Tensor& x, int64_t dim, bool log, std::optional<DType> dtype = std::nullopt);
/** Gradient of softmax (log: log_softmax) from the output gradient and the forward's output y. */
Tensor softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log);
/** The layer_norm op over x's dims from axis on; weight and bias may be undefined. Returns (y, mean, rstd). */
std::vector<Tensor> native_layer_norm(const Tensor& x, int64_t axis, const Tensor& weight, const Tensor& bias,
                                      double eps);
/** torch.nn.functional.layer_norm over the trailing dims normalized_shape; weight and bias may be undefined. */
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps);
/** (dx, dweight, dbias) of layer_norm; weight may be undefined. */
std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t axis);
/** x @ weight^T + bias (bias may be undefined): one op for float32/float64, computed in float32 for 16-bit
 * dtypes, matmul and add otherwise. */
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
/** weight[indices]: rows of weight for each index. */
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx);
/** Gradient of embedding: rows of grad summed into a [num_weights, dim] tensor (padding_idx's row: zeros). */
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx);
/** The dropout op with probability p from the default generator: (y, bool keep mask). */
std::pair<Tensor, Tensor> native_dropout(const Tensor& x, double p);
/** Dropout: x itself when not training or p == 0, else elements zeroed with probability p, the rest scaled. */
Tensor dropout(const Tensor& x, double p, bool training);
/** nll_loss (reduction 0 none, 1 mean, 2 sum); weight may be undefined. Returns (loss, total_weight). */
std::pair<Tensor, Tensor> nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t reduction,
                                   int64_t ignore_index);
/** Gradient of nll_loss with respect to its input, of shape input_shape. */
Tensor nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& total_weight, const Tensor& weight,
                         int64_t reduction, int64_t ignore_index, const Shape& input_shape);

/** Wait until t's value can be read on the host (a sync point). */
void wait_readable(const Tensor& t);

}  // namespace rill::eager
