// Reductions in the functional API: builds each op's attrs (layout in ops/reduce.cpp)
// and calls it. Dims are checked by inference, so graph mode gets the same errors.
#include <initializer_list>
#include <string>

#include "rill/eager/functional.h"

namespace rill::eager {
namespace {

bool is_one_of(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

}  // namespace

Tensor reduce(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
              std::optional<DType> dtype) {
  const std::string& name = op.name;
  RILL_CHECK(x.defined(), Value, "[", name, "] got an undefined tensor");
  AttrsSym attrs;
  if (is_one_of(name, {"sum", "mean"})) {
    attrs = make_attrs({dims, keepdim, dtype.value_or(DType::kFloat32), dtype.has_value()});
  } else if (is_one_of(name, {"amax", "amin", "max", "min", "argmax", "argmin"})) {
    RILL_CHECK(!dtype.has_value(), Type, "[", name, "] does not take a dtype argument; convert the input with "
               ".to(dtype) first");
    attrs = make_attrs({dims, keepdim});
  } else if (is_one_of(name, {"max_dim", "min_dim"})) {
    RILL_FAIL(Value, "[", name, "] returns values and indices; call it through reduce_with_indices");
  } else {
    RILL_FAIL(Value, "[reduce] '", name, "' is not a reduction; expected sum, mean, amax, amin, max, min, argmax "
              "or argmin");
  }
  return call1(op, {&x, 1}, {}, attrs);
}

std::pair<Tensor, Tensor> reduce_with_indices(const OpSchema& op, const Tensor& x, int64_t dim, bool keepdim) {
  static const OpSchema& max_dim = eager::op("max_dim");
  static const OpSchema& min_dim = eager::op("min_dim");
  const OpSchema* target = nullptr;
  if (op.name == "max_dim" || op.name == "max") target = &max_dim;
  else if (op.name == "min_dim" || op.name == "min") target = &min_dim;
  RILL_CHECK(target != nullptr, Value, "[", op.name, "] has no values-and-indices form; expected max or min");
  RILL_CHECK(x.defined(), Value, "[", op.name, "] got an undefined tensor");
  std::vector<Tensor> out = call(*target, {&x, 1}, {}, make_attrs({dim, keepdim}));
  return {out[0], out[1]};
}

}  // namespace rill::eager
