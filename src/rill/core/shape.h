// Shapes, strides (in elements), broadcasting and dimension checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

/** Sizes of each dimension. */
using Shape = std::vector<int64_t>;
/** Step in elements between neighbours along each dimension. */
using Strides = std::vector<int64_t>;

/** Product of sizes (1 for a 0-dim shape). */
int64_t shape_numel(const Shape& shape);
/** Row-major strides of a dense tensor of this shape. */
Strides contiguous_strides(const Shape& shape);
/** True when strides describe a dense row-major layout (size-1 dims ignored). */
bool strides_are_contiguous(const Shape& shape, const Strides& strides);
/** Broadcast two shapes; raises RuntimeError naming op when they do not broadcast. */
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/** Wrap dim into [0, ndim); raises IndexError naming op when out of range. */
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);
/** Check sizes are non-negative; raises ValueError naming op otherwise. */
void check_sizes(const Shape& shape, const char* op);
/** "[2, 3]" */
std::string shape_str(const Shape& shape);

}  // namespace rill
