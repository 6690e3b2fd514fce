// View ops: new metas over the same storage (no kernel, no copy). Pure
// functions of the input meta, so graph mode can infer them too.
#pragma once

#include <optional>

#include "rill/core/tensor_meta.h"

namespace rill::view {

/** A view's meta and its offset relative to the input's, in elements. */
struct ViewResult {
  MetaSym meta;
  int64_t offset = 0;
};

/** Resolve a single -1 in shape against numel; raises RuntimeError on mismatch. */
Shape infer_size(const Shape& shape, int64_t numel, const char* op);
/** view(shape): nullopt when the strides cannot express it without a copy. */
std::optional<ViewResult> view(const TensorMeta& m, const Shape& shape);
/** transpose(dim0, dim1). */
ViewResult transpose(const TensorMeta& m, int64_t dim0, int64_t dim1);
/** permute(dims). */
ViewResult permute(const TensorMeta& m, const std::vector<int64_t>& dims);
/** expand(sizes) with -1 keeping a size; new leading dims allowed. */
ViewResult expand(const TensorMeta& m, const Shape& sizes);
/** slice(dim, start, stop, step) with Python semantics (clamped; step > 0). */
ViewResult slice(const TensorMeta& m, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                 int64_t step);
/** narrow(dim, start, length): start must be in range (negative wraps). */
ViewResult narrow(const TensorMeta& m, int64_t dim, int64_t start, int64_t length);
/** select(dim, index): removes dim; index may be negative. */
ViewResult select(const TensorMeta& m, int64_t dim, int64_t index);
/** unsqueeze(dim). */
ViewResult unsqueeze(const TensorMeta& m, int64_t dim);
/** squeeze(): all size-1 dims; squeeze(dims): those of the listed dims that have size 1. */
ViewResult squeeze(const TensorMeta& m, std::optional<std::vector<int64_t>> dims);
/** diagonal(offset, dim1, dim2): dims dim1 and dim2 removed, their diagonal appended as the last dim. */
ViewResult diagonal(const TensorMeta& m, int64_t offset, int64_t dim1, int64_t dim2);

}  // namespace rill::view
