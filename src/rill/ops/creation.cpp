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
  ops::define({"fill", 0, 1, {"shape", "dtype"}, infer_shaped, /*strided_output=*/true});
  ops::define({"arange", 0, 2, {"length", "dtype"}, infer_arange});
  ops::define({"rand", 0, 2, {"shape", "dtype"}, infer_random_float});      // scalars: seed, offset
  ops::define({"randn", 0, 2, {"shape", "dtype"}, infer_random_float});     // scalars: seed, offset
  ops::define({"randint", 0, 4, {"shape", "dtype"}, infer_shaped});         // scalars: seed, offset, low, high
}

}  // namespace rill
