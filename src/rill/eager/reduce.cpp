// Reductions and scans in the functional API: builds each op's attrs (layout in
// ops/reduce.cpp) and calls it. Dims are checked by inference, so graph mode gets
// the same errors. logsumexp and norm are computed with other ops (Note [Composite
// ops] in ops/reduce.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <initializer_list>
#include <string>

#include "rill/eager/functional.h"
#include "rill/eager/math.h"

namespace rill::eager {
namespace {

bool is_one_of(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

}  // namespace

namespace {

// The attrs of the last reductions this thread issued: a loop calls the same `x.sum()` again and again, and
// building and interning its attrs cost as much as the rest of the call.
struct ReduceAttrsMemo {
  struct Entry {
    const OpSchema* op = nullptr;
    std::vector<int64_t> dims;
    bool keepdim = false;
    std::optional<DType> dtype;
    AttrsSym attrs;
  };
  static constexpr size_t kEntries = 4;
  Entry entries[kEntries];
  size_t next = 0;

  AttrsSym find(const OpSchema& op, const std::vector<int64_t>& dims, bool keepdim, std::optional<DType> dtype) {
    for (const Entry& e : entries)
      if (e.op == &op && e.keepdim == keepdim && e.dtype == dtype && e.dims == dims) return e.attrs;
    return {};
  }
  void add(const OpSchema& op, const std::vector<int64_t>& dims, bool keepdim, std::optional<DType> dtype,
           AttrsSym attrs) {
    entries[next] = Entry{&op, dims, keepdim, dtype, attrs};
    next = (next + 1) % kEntries;
  }
};

}  // namespace

Tensor reduce(const OpSchema& op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
              std::optional<DType> dtype) {
  const std::string& name = op.name;
  RILL_CHECK(x.defined(), Value, "[", name, "] got an undefined tensor");
  thread_local ReduceAttrsMemo memo;
  if (AttrsSym hit = memo.find(op, dims, keepdim, dtype)) return call1(op, {&x, 1}, {}, hit);
  AttrsSym attrs;
  if (is_one_of(name, {"sum", "mean"})) {
    AttrValue dtype_attr = std::monostate{};  // None: the input's dtype (int64 for integers)
    if (dtype) dtype_attr = *dtype;
    attrs = make_attrs({dims, keepdim, dtype_attr});
  } else if (is_one_of(name, {"amax", "amin", "max", "min", "argmax", "argmin", "any", "all"})) {
    RILL_CHECK(!dtype.has_value(), Type, "[", name, "] does not take a dtype argument; convert the input with "
               ".to(dtype) first");
    if (is_one_of(name, {"argmax", "argmin"})) {  // int? dim: None reduces the flattened input
      RILL_CHECK(dims.size() <= 1, Type, "[", name, "] expected at most one dim, got ", dims.size(),
                 "; flatten the input first to reduce over several dims");
      AttrValue dim = std::monostate{};
      if (!dims.empty()) dim = dims[0];
      attrs = make_attrs({dim, keepdim});
    } else {
      attrs = make_attrs({dims, keepdim});
    }
  } else if (is_one_of(name, {"prod", "prod_dim"})) {
    RILL_FAIL(Value, "[", name, "] takes one int dim or none; call eager::prod");
  } else if (is_one_of(name, {"max_dim", "min_dim"})) {
    RILL_FAIL(Value, "[", name, "] returns values and indices; call it through reduce_with_indices");
  } else {
    RILL_FAIL(Value, "[reduce] '", name, "' is not a reduction; expected sum, mean, amax, amin, max, min, "
              "argmax, argmin, any or all");
  }
  memo.add(op, dims, keepdim, dtype, attrs);
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

Tensor scan(const OpSchema& op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  std::vector<AttrValue> attrs;  // not a braced list: GCC 12 warns falsely on a braced variant list here
  attrs.emplace_back(dim);
  if (dtype) attrs.emplace_back(*dtype);
  else attrs.emplace_back(std::monostate{});
  return call1(op, {&x, 1}, {}, make_attrs(std::move(attrs)));
}

namespace {

// The output meta of a composite op (Note [Composite ops]): its inference, so errors match.
const TensorMeta& composite_meta(const OpSchema& op, const Tensor& x, AttrsSym attrs) {
  RILL_CHECK(x.defined(), Value, "[", op.name, "] got an undefined tensor");
  MetaSym m[1] = {x.meta()};
  return *ops::infer_cached(op, m, {}, attrs).outputs[0];
}

Tensor number(double v, DType t) { return full({}, Scalar(v), t); }

}  // namespace

Tensor logsumexp(const Tensor& input, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpSchema& lse = op("logsumexp");
  static const OpSchema& amax = op("amax");
  AttrsSym attrs = make_attrs({dims, keepdim});
  const TensorMeta& out = composite_meta(lse, input, attrs);
  Tensor y;
  {
    GradModeGuard off(false);  // recorded once, as logsumexp (Note [Composite ops] in ops/reduce.cpp)
    Tensor x = to_dtype(input, out.dtype);
    if (x.numel() == 0) {
      y = log(sum(exp(x), dims, keepdim));
    } else {
      // Shift by the (finite) maximum so exp cannot overflow.
      Tensor m = reduce(amax, x, dims, /*keepdim=*/true);
      m = where(eq(abs(m), Scalar(std::numeric_limits<double>::infinity())), number(0.0, out.dtype), m);
      y = add(log(sum(exp(sub(x, m)), dims, keepdim)), reshape(m, out.shape));
    }
  }
  record_composite(lse, {&input, 1}, {}, attrs, {&y, 1});
  return y;
}

Tensor norm(const Tensor& input, double ord, const std::vector<int64_t>& dims, bool keepdim,
            std::optional<DType> dtype) {
  static const OpSchema& norm_op = op("norm");
  static const OpSchema& amax = op("amax");
  static const OpSchema& amin = op("amin");
  Tensor x = dtype ? to_dtype(input, *dtype) : input;
  AttrsSym attrs = make_attrs({dims, keepdim, ord});
  const TensorMeta& out = composite_meta(norm_op, x, attrs);
  Tensor y;
  {
    GradModeGuard off(false);  // recorded once, as norm (Note [Composite ops] in ops/reduce.cpp)
    // As PyTorch: a norm over single elements is their absolute value (no power to overflow or underflow),
    // and float16/bfloat16 are reduced in float32, rounded once at the end.
    bool single_elements = true;
    for (int64_t d = 0; d < x.ndim(); ++d) {
      const bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end() ||
                           std::find(dims.begin(), dims.end(), d - x.ndim()) != dims.end();
      if (reduced && x.shape()[d] != 1) single_elements = false;
    }
    const bool narrow = x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16;
    Tensor w = narrow && !single_elements ? to_dtype(x, DType::kFloat32) : x;
    Tensor a = abs(w);
    if (single_elements) y = ord == 0.0 ? to_dtype(ne(w, Scalar(0.0)), w.dtype()) : a;
    else if (std::isinf(ord)) y = reduce(ord > 0 ? amax : amin, a, dims, keepdim);
    else if (ord == 0.0) y = to_dtype(sum(ne(w, Scalar(0.0)), dims, keepdim), w.dtype());
    else if (ord == 1.0) y = sum(a, dims, keepdim);
    else if (ord == 2.0) y = sqrt(sum(mul(w, w), dims, keepdim));
    else y = pow(sum(pow(a, Scalar(ord)), dims, keepdim), Scalar(1.0 / ord));
    y = reshape(to_dtype(y, out.dtype), out.shape);
  }
  record_composite(norm_op, {&x, 1}, {}, attrs, {&y, 1});
  return y;
}

}  // namespace rill::eager
