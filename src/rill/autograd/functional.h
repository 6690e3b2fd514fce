// The differentiable functional API: the eager functional API (eager/functional.h)
// plus recording. Each function runs the eager op, then, when grad mode is on and
// an input requires grad, attaches a backward node to the floating-point outputs.
// The Python bindings call these, never eager:: directly, for anything a
// gradient can flow through.
#pragma once

#include <optional>
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
