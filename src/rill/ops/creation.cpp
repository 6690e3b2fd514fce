// Creation ops: fill, arange and the random generators. Shape and dtype are
// attrs; values (fill value, arange start/step, seeds) are scalars, which do not
// take part in inference.
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// attrs [shape, dtype]
InferResult infer_shaped(const InferContext& c) {
  const Shape& shape = c.attrs.get_ints(0);
  check_sizes(shape, c.op.name.c_str());
  return {{make_contiguous_meta(shape, c.attrs.get_dtype(1))}, {}};
}

// attrs [length, dtype]
InferResult infer_arange(const InferContext& c) {
  return {{make_contiguous_meta({c.attrs.get_int(0)}, c.attrs.get_dtype(1))}, {}};
}

InferResult infer_random_float(const InferContext& c) {
  DType t = c.attrs.get_dtype(1);
  RILL_CHECK(dtype_is_floating(t), Type, "[", c.op.name, "] expected a floating dtype, got ", dtype_name(t),
             "; use rill.randint for integers");
  return infer_shaped(c);
}

}  // namespace

void register_creation_ops() {
  const OpFlags k, strided = {.strided_output = true}, random = {.random = true};
  // seed, offset: the generator's state this call draws from (eager/creation.cpp).
  ops::define("fill(Scalar value, int[] shape, ScalarType dtype) -> Tensor", infer_shaped, strided,
              "a tensor of shape filled with value");
  ops::define("arange(Scalar start, Scalar step, int length, ScalarType dtype) -> Tensor", infer_arange, k,
              "start + i * step for i < length");
  ops::define("rand(Scalar seed, Scalar offset, int[] shape, ScalarType dtype) -> Tensor", infer_random_float,
              random, "uniform samples in [0, 1)");
  ops::define("randn(Scalar seed, Scalar offset, int[] shape, ScalarType dtype) -> Tensor", infer_random_float,
              random, "standard normal samples");
  ops::define("randint(Scalar seed, Scalar offset, Scalar low, Scalar high, int[] shape, ScalarType dtype) -> Tensor",
              infer_shaped, random, "uniform integers in [low, high)");
}

}  // namespace rill
