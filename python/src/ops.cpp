// Math and creation: module functions (rill.add, rill.zeros, ...), Tensor
// methods and Python operators. Op schemas are looked up once, at import.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <nanobind/ndarray.h>

#include "bind.h"
#include "rill/kernels/cpu/box_muller.h"
#include "rill/ops/elementwise.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {

// True when t's elements fill a block of memory exactly: dense in some order of its dims.
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims that iterate
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] != 1) dims.emplace_back(t.strides()[d], t.shape()[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace

// PyTorch's rule for in-place ops: an input that shares some but not all of the output's memory
// (x[1:] += x[:-1], x += x.t()) raises, as the result would depend on the order elements are written.
// Like PyTorch, layouts where that is hard to tell (both not dense) are let through.

void check_no_partial_overlap(const Tensor& out, const Tensor& in, const std::string& op) {
  if (out.numel() == 0 || in.numel() == 0 || out.storage() != in.storage()) return;
  if (!non_overlapping_and_dense(out) || !non_overlapping_and_dense(in)) return;
  const int64_t ob = out.offset() * dtype_itemsize(out.dtype()), ib = in.offset() * dtype_itemsize(in.dtype());
  const int64_t oe = ob + out.numel() * dtype_itemsize(out.dtype());
  const int64_t ie = ib + in.numel() * dtype_itemsize(in.dtype());
  const bool partial = (ob == ib && oe == ie) ? out.strides() != in.strides() : (ob < ie && ib < oe);
  RILL_CHECK(!partial, Runtime, "[", op, "_] unsupported operation: some elements of the input tensor and the "
             "written-to tensor refer to a single memory location; clone() the input first");
}

void check_no_internal_overlap(const Tensor& out, const std::string& op) {
  for (size_t d = 0; d < out.shape().size(); ++d)
    RILL_CHECK(out.shape()[d] <= 1 || out.strides()[d] != 0, Runtime, "[", op, "_] unsupported operation: more "
               "than one element of the written-to tensor refers to a single memory location; clone() the "
               "tensor first");
}

BinaryOp make_binary(const std::string& name, bool numbers, bool reversible) {
  return {name, &eager::op(name), numbers ? &eager::op(name + "_scalar") : nullptr,
          numbers && reversible ? &eager::op("r" + name + "_scalar") : nullptr};
}

namespace {

[[noreturn]] void bad_operand(const BinaryOp& op, nb::handle other) {
  RILL_FAIL(Type, "[", op.name, "] expected a Tensor", op.scalar ? " or a number" : "",
            " as the other operand, got ", nb::inst_name(other).c_str());
}

}  // namespace

// A zero integer divisor and an integer tensor's negative integer exponent are known from the arguments
// alone, so they raise here rather than when the kernel runs.
void check_number_operand(const OpSchema& op, const Tensor& a, const Scalar& s) {
  static const OpSchema* pow_scalar = &eager::op("pow_scalar");
  if (dtype_is_floating(a.dtype()) || s.is_floating() || s.kind() == Scalar::Kind::kBool) return;
  const std::string& name = op.overload_of.empty() ? op.name : op.overload_of;
  if (op.flags.integer_divisor)
    RILL_CHECK(s.to_int() != 0, Runtime, "ZeroDivisionError: [", name, "] integer division by zero; convert to "
               "float for inf/nan results");
  if (&op == pow_scalar && a.dtype() != DType::kBool)
    RILL_CHECK(s.to_int() >= 0, Runtime, "[pow] integers to negative integer powers are not allowed; convert the "
               "base to float first");
}

std::optional<Tensor> try_binary(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse) {
  if (nb::isinstance<Tensor>(other)) {
    const Tensor& b = nb::cast<const Tensor&>(other);
    return reverse ? eager::binary(*op.tensor, b, a) : eager::binary(*op.tensor, a, b);
  }
  auto s = scalar_from_object(other);
  const OpSchema* form = reverse ? op.rscalar : op.scalar;
  if (!s || !form) return std::nullopt;
  if (!reverse) check_number_operand(*form, a, *s);
  return eager::binary_scalar(*form, a, *s);
}

Tensor binary(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse) {
  auto r = try_binary(op, a, other, reverse);
  if (!r) bad_operand(op, other);
  return *r;
}

nb::object binary_operator(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse) {
  auto r = try_binary(op, a, other, reverse);
  if (!r) return nb::borrow(Py_NotImplemented);
  return nb::cast(std::move(*r));
}

const Tensor& binary_inplace(const BinaryOp& op, const Tensor& a, nb::handle other) {
  check_no_internal_overlap(a, op.name);
  if (nb::isinstance<Tensor>(other)) {
    check_no_partial_overlap(a, nb::cast<const Tensor&>(other), op.name);
    Tensor in[2] = {a, nb::cast<const Tensor&>(other)};
    eager::inplace(*op.tensor, in);
    return a;
  }
  auto s = scalar_from_object(other);
  if (!s || !op.scalar) bad_operand(op, other);
  check_number_operand(*op.scalar, a, *s);
  Scalar sc[1] = {*s};
  eager::inplace(*op.scalar, {&a, 1}, sc);
  return a;
}

void set_python_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kType: PyErr_SetString(PyExc_TypeError, e.what()); break;
    case ErrorKind::kValue: PyErr_SetString(PyExc_ValueError, e.what()); break;
    case ErrorKind::kIndex: PyErr_SetString(PyExc_IndexError, e.what()); break;
    case ErrorKind::kNotImplemented: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
    case ErrorKind::kRuntime: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
  }
}

namespace {

// Note [Operator slots]
// `a + b` on tensors is the hottest call in the API. Bound as a method named __add__, it reaches C++
// through CPython's generic slot (a type-dict lookup of __add__, then of __radd__ for the reflected
// case), a vectorcall and nanobind's overload dispatch, about a quarter of an op's instructions on the
// client thread. For + - * / the type's number slots are set to the functions below instead, which
// call the same binary_operator directly; the methods stay in the type dict for explicit
// `Tensor.__add__(a, b)` calls and for subclasses, which CPython gives the generic slot. A slot
// receives the operands in source order, so the tensor is the left one unless only the right one is.
template <const BinaryOp* const* Op>
PyObject* number_slot(PyObject* a, PyObject* b) noexcept {
  try {
    nb::object r = nb::isinstance<Tensor>(a) ? binary_operator(**Op, nb::cast<const Tensor&>(nb::handle(a)), b, false)
                                             : binary_operator(**Op, nb::cast<const Tensor&>(nb::handle(b)), a, true);
    return r.release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const Error& e) {
    set_python_error(e);
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

const BinaryOp* g_slot_add = nullptr;
const BinaryOp* g_slot_sub = nullptr;
const BinaryOp* g_slot_mul = nullptr;
const BinaryOp* g_slot_div = nullptr;

}  // namespace

void install_number_slots(nb::class_<Tensor>& cls) {
  RILL_ASSERT(g_slot_add && g_slot_sub && g_slot_mul && g_slot_div, "install_number_slots before init_ops");
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  type->tp_as_number->nb_add = number_slot<&g_slot_add>;
  type->tp_as_number->nb_subtract = number_slot<&g_slot_sub>;
  type->tp_as_number->nb_multiply = number_slot<&g_slot_mul>;
  type->tp_as_number->nb_true_divide = number_slot<&g_slot_div>;
  PyType_Modified(type);
}

const Tensor& binary_out(const BinaryOp& op, const Tensor& a, nb::handle other, const Tensor& out) {
  std::vector<Tensor> in = {a};
  std::vector<Scalar> numbers;
  const OpSchema* form = op.tensor;
  if (nb::isinstance<Tensor>(other)) {
    in.push_back(nb::cast<Tensor>(other));
  } else {
    auto s = scalar_from_object(other);
    if (!s || !op.scalar) bad_operand(op, other);
    check_number_operand(*op.scalar, a, *s);
    numbers.push_back(*s);
    form = op.scalar;
  }
  RILL_CHECK(!eager::grad_enabled() || (!eager::should_record(in) && !out.impl()->requires_grad()), Runtime,
             "[", op.name, "] functions with out=... arguments don't support automatic differentiation, but one of "
             "the arguments requires grad; call it under rill.no_grad() or drop out=");
  check_no_internal_overlap(out, op.name);
  eager::call_into(*form, in, numbers, empty_attrs(), out);
  out.storage()->bump_version();
  return out;
}

void def_operators(nb::class_<Tensor>& cls, const BinaryOp& op, const char* dunder, const char* rdunder,
                   const char* idunder) {
  const BinaryOp* p = new BinaryOp(op);  // lives as long as the module
  cls.def(dunder, [p](const Tensor& a, nb::handle b) { return binary_operator(*p, a, b, false); });
  if (rdunder) cls.def(rdunder, [p](const Tensor& a, nb::handle b) { return binary_operator(*p, a, b, true); });
  if (idunder)
    cls.def(idunder, [p](const Tensor& a, nb::handle b) -> const Tensor& { return binary_inplace(*p, a, b); },
            nb::rv_policy::reference_internal);
}

namespace {

// alpha * other, for add/sub's alpha argument. Like PyTorch, other is converted to the result dtype of
// `a op other` first and multiplied there (an int8 other with alpha=100 must not wrap in int8 when a is
// float), and alpha must fit that dtype's category.
nb::object scaled(const BinaryOp& op, const BinaryOp& mul, const Tensor& a, nb::handle other, nb::handle alpha) {
  if (alpha.is_none()) return nb::borrow(other);
  auto k = scalar_from_object(alpha);
  RILL_CHECK(k.has_value(), Type, "[", op.name, "] alpha must be a number, got ", nb::inst_name(alpha).c_str());
  const bool is_tensor = nb::isinstance<Tensor>(other);
  std::vector<MetaSym> metas = {a.meta()};
  std::vector<Scalar> numbers;
  if (is_tensor) {
    metas.push_back(nb::cast<const Tensor&>(other).meta());
  } else {
    auto s = scalar_from_object(other);
    if (!s) bad_operand(op, other);
    numbers.push_back(*s);
  }
  const DType t = result_type(metas, numbers);
  RILL_CHECK(dtype_is_floating(t) || !k->is_floating(), Runtime, "[", op.name,
             "] For integral input tensors, argument alpha must not be a floating point number.");
  RILL_CHECK(t == DType::kBool || k->kind() != Scalar::Kind::kBool, Runtime, "[", op.name,
             "] Boolean alpha only supported for Boolean results.");
  if (!is_tensor) return other * alpha;
  Tensor b = eager::to_dtype(nb::cast<const Tensor&>(other), t);
  return nb::cast(eager::binary(*mul.tensor, b, eager::full({}, *k, t)));
}

struct FactoryArgs {
  Shape shape;
  std::optional<DType> dtype;
  Device device;
  bool requires_grad = false;
};

// f(*size, dtype=None, device=None, requires_grad=False, size=None)
FactoryArgs parse_factory(const nb::args& args, const nb::kwargs& kwargs, const char* op, bool with_shape = true) {
  FactoryArgs f;
  bool have_size = false;
  for (auto [key, value] : kwargs) {
    std::string k = nb::cast<std::string>(key);
    if (k == "dtype") {
      if (!value.is_none()) {
        f.dtype = dtype_from_object(value);
        RILL_CHECK(f.dtype.has_value(), Type, "[", op, "] dtype must be a rill.dtype, got ",
                   nb::inst_name(value).c_str());
      }
    } else if (k == "device") {
      f.device = device_from_object(value, op);
    } else if (k == "requires_grad") {
      f.requires_grad = nb::cast<bool>(value);
    } else if (k == "size" && with_shape) {
      f.shape = ints_from_object(value, op);
      have_size = true;
    } else if (k == "layout" || k == "pin_memory" || k == "memory_format" || k == "generator" || k == "out") {
      RILL_CHECK(value.is_none() || k == "pin_memory" || k == "generator", Type, "[", op, "] argument '", k,
                 "' is only supported with its default value");
    } else {
      RILL_FAIL(Type, "[", op, "] got an unexpected keyword argument '", k, "'");
    }
  }
  if (with_shape && !have_size) f.shape = shape_from_args(args, op);
  if (with_shape && have_size)
    RILL_CHECK(args.size() == 0, Type, "[", op, "] sizes given both positionally and as size=");
  check_sizes(f.shape, op);
  return f;
}

Tensor finish(Tensor t, const FactoryArgs& f) {
  if (f.requires_grad) {
    RILL_CHECK(dtype_is_floating(t.dtype()), Runtime,
               "only Tensors of floating point dtype can require gradients, got ", dtype_name(t.dtype()));
    t.impl()->set_requires_grad(true);
  }
  return t;
}

}  // namespace

void init_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  static const BinaryOp add = make_binary("add"), sub = make_binary("sub"), mul = make_binary("mul"),
                        div = make_binary("div"), pow = make_binary("pow");
  g_slot_add = &add;
  g_slot_sub = &sub;
  g_slot_mul = &mul;
  g_slot_div = &div;
  static const BinaryOp cmp[6] = {make_binary("eq", true, false), make_binary("ne", true, false),
                                  make_binary("lt", true, false), make_binary("le", true, false),
                                  make_binary("gt", true, false), make_binary("ge", true, false)};

  // --- unary: rill.<op>, Tensor.<op> and Tensor.<op>_ come from the signatures (schema_bindings.cpp) ---
  const OpSchema* neg = &eager::op("neg");
  const OpSchema* abs = &eager::op("abs");
  cls.def("__neg__", [neg](const Tensor& x) { return eager::unary(*neg, x); });
  cls.def("__abs__", [abs](const Tensor& x) { return eager::unary(*abs, x); });
  cls.def("__pos__", [](const Tensor& x) -> const Tensor& {
    RILL_CHECK(x.dtype() != DType::kBool, Type, "[positive] the `+` operator, on a bool tensor is not supported");
    return x;
  }, nb::rv_policy::reference_internal);

  // --- binary: operators (rill.mul, Tensor.mul, Tensor.mul_, ... come from the signatures) ---
  def_operators(cls, mul, "__mul__", "__rmul__", "__imul__");
  def_operators(cls, div, "__truediv__", "__rtruediv__", "__itruediv__");
  def_operators(cls, pow, "__pow__", "__rpow__", "__ipow__");
  def_operators(cls, add, "__add__", "__radd__", "__iadd__");
  def_operators(cls, sub, "__sub__", "__rsub__", "__isub__");
  // add/sub with alpha: input + alpha * other
  for (const BinaryOp* p : {&add, &sub}) {
    auto fn = [p](const Tensor& a, nb::handle b, nb::handle alpha) {
      return binary(*p, a, scaled(*p, mul, a, b, alpha));
    };
    auto fn_out = [p](const Tensor& a, nb::handle b, nb::handle alpha, nb::handle out) -> nb::object {
      if (out.is_none()) return nb::cast(binary(*p, a, scaled(*p, mul, a, b, alpha)));
      binary_out(*p, a, scaled(*p, mul, a, b, alpha), nb::cast<const Tensor&>(out));
      return nb::borrow(out);
    };
    auto ifn = [p](const Tensor& a, nb::handle b, nb::handle alpha) -> const Tensor& {
      if (nb::isinstance<Tensor>(b)) check_no_partial_overlap(a, nb::cast<const Tensor&>(b), p->name);
      return binary_inplace(*p, a, scaled(*p, mul, a, b, alpha));
    };
    for (const char* name : {p->name.c_str(), p == &sub ? "subtract" : nullptr}) {
      if (name)
        m.def(name, fn_out, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = nb::none(),
              nb::arg("out") = nb::none());
    }
    cls.def(p->name.c_str(), fn, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = nb::none());
    cls.def((p->name + "_").c_str(), ifn, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = nb::none(),
            nb::rv_policy::reference_internal);
  }
  // Comparisons: the operators (rill.eq, Tensor.eq, rill.less, ... come from the signatures).
  const char* cmp_dunders[6] = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"};
  for (int i = 0; i < 6; ++i) def_operators(cls, cmp[i], cmp_dunders[i], nullptr, nullptr);
  cls.def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  // --- where ---
  auto where3 = [](const Tensor& cond, nb::handle a, nb::handle b) {
    // A Python number takes part in promotion as a number (it widens the other operand only when of a
    // higher category, as PyTorch's wrapped numbers do): it becomes a 0-dim tensor of the result dtype.
    std::vector<MetaSym> metas;
    std::vector<Scalar> numbers;
    for (nb::handle v : {a, b}) {
      if (nb::isinstance<Tensor>(v)) {
        metas.push_back(nb::cast<const Tensor&>(v).meta());
        continue;
      }
      auto s = scalar_from_object(v);
      RILL_CHECK(s.has_value(), Type, "[where] expected a Tensor or a number, got ", nb::inst_name(v).c_str());
      numbers.push_back(*s);
    }
    const DType t = result_type(metas, numbers);
    auto as_tensor = [&](nb::handle v) {
      if (nb::isinstance<Tensor>(v)) return nb::cast<Tensor>(v);
      Scalar s = *scalar_from_object(v);
      // A float too large for a 16-bit result becomes inf, as PyTorch's wrapped number does (full() would
      // refuse it: Note [Scalar range check]).
      if (s.is_floating() && dtype_is_floating(t) && t != DType::kFloat64)
        return eager::to_dtype(eager::full({}, s, DType::kFloat64), t);
      return eager::full({}, s, t);
    };
    return eager::where(cond, as_tensor(a), as_tensor(b));
  };
  m.def("where", where3, nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  cls.def("where", [where3](const Tensor& self, const Tensor& cond, nb::handle other) {
    return where3(cond, nb::cast(self), other);
  }, nb::arg("condition"), nb::arg("other"));

  // --- matmul ---
  auto mm = [](const Tensor& a, const Tensor& b) { return eager::matmul(a, b); };
  m.def("matmul", mm, nb::arg("input"), nb::arg("other"));
  cls.def("matmul", mm, nb::arg("other"));
  cls.def("__matmul__", [](const Tensor& a, nb::handle b) -> nb::object {
    if (!nb::isinstance<Tensor>(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(eager::matmul(a, nb::cast<const Tensor&>(b)));
  });
  cls.def("__rmatmul__", [](const Tensor& a, nb::handle b) -> nb::object {
    if (!nb::isinstance<Tensor>(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(eager::matmul(nb::cast<const Tensor&>(b), a));
  });
  auto mm2 = [](const char* name, int64_t nd) {
    return [name, nd](const Tensor& a, const Tensor& b) {
      RILL_CHECK(a.ndim() == nd && b.ndim() == nd, Runtime, "[", name, "] expected ", nd, "-D tensors, got ",
                 a.ndim(), "-D and ", b.ndim(), "-D");
      // bmm does not broadcast its batch dim (matmul does).
      RILL_CHECK(nd != 3 || a.shape()[0] == b.shape()[0], Runtime, "[", name, "] expected both tensors to have "
                 "the same batch size, got ", a.shape()[0], " and ", b.shape()[0], "; use matmul to broadcast");
      return eager::matmul(a, b);
    };
  };
  m.def("mm", mm2("mm", 2), nb::arg("input"), nb::arg("mat2"));
  cls.def("mm", mm2("mm", 2), nb::arg("mat2"));
  m.def("bmm", mm2("bmm", 3), nb::arg("input"), nb::arg("mat2"));
  cls.def("bmm", mm2("bmm", 3), nb::arg("mat2"));

  // --- creation ---
  auto filled = [](const char* name, int value) {
    return [name, value](nb::args args, nb::kwargs kwargs) {
      FactoryArgs f = parse_factory(args, kwargs, name);
      return finish(eager::full(f.shape, Scalar(int64_t{value}), f.dtype.value_or(default_float()), f.device), f);
    };
  };
  m.def("zeros", filled("zeros", 0));
  m.def("ones", filled("ones", 1));
  m.def("empty", [](nb::args args, nb::kwargs kwargs) {
    FactoryArgs f = parse_factory(args, kwargs, "empty");
    return finish(eager::empty(f.shape, f.dtype.value_or(default_float()), f.device), f);
  });
  m.def("full", [](nb::handle size, nb::handle value, nb::kwargs kwargs) {
    FactoryArgs f = parse_factory(nb::args(), kwargs, "full", false);
    f.shape = ints_from_object(size, "full");
    check_sizes(f.shape, "full");
    auto s = scalar_from_object(value);
    RILL_CHECK(s.has_value(), Type, "[full] fill_value must be a number, got ", nb::inst_name(value).c_str());
    return finish(eager::full(f.shape, *s, f.dtype.value_or(s->default_dtype()), f.device), f);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("kwargs"));
  auto random = [](const char* name, Tensor (*gen)(const Shape&, DType, Device)) {
    return [name, gen](nb::args args, nb::kwargs kwargs) {
      FactoryArgs f = parse_factory(args, kwargs, name);
      return finish(gen(f.shape, f.dtype.value_or(default_float()), f.device), f);
    };
  };
  m.def("rand", random("rand", [](const Shape& s, DType t, Device d) { return eager::rand(s, t, d); }));
  m.def("randn", random("randn", [](const Shape& s, DType t, Device d) { return eager::randn(s, t, d); }));
  m.def("randint", [](nb::args args, nb::kwargs kwargs) {
    // randint(high, size) or randint(low, high, size); size may also come as size=
    bool size_kw = kwargs.contains("size");
    size_t numbers = args.size() - (size_kw ? 0 : 1);
    RILL_CHECK(args.size() >= 1 && (numbers == 1 || numbers == 2) && args.size() <= 3, Type,
               "[randint] expected randint(high, size) or randint(low, high, size)");
    int64_t low = 0, high = ints_from_object(args[numbers - 1], "randint").at(0);
    if (numbers == 2) low = ints_from_object(args[0], "randint").at(0);
    FactoryArgs f = parse_factory(nb::args(), kwargs, "randint", size_kw);
    if (!size_kw) f.shape = ints_from_object(args[args.size() - 1], "randint");
    check_sizes(f.shape, "randint");
    return finish(eager::randint(low, high, f.shape, f.dtype.value_or(DType::kInt64), f.device), f);
  });
  m.def("arange", [](nb::handle a, nb::handle b, nb::handle step, nb::kwargs kwargs) {
    FactoryArgs f = parse_factory(nb::args(), kwargs, "arange", false);
    auto num = [](nb::handle h, const char* what) {
      auto s = scalar_from_object(h);
      RILL_CHECK(s.has_value(), Type, "[arange] ", what, " must be a number, got ", nb::inst_name(h).c_str());
      return s->kind() == Scalar::Kind::kBool ? Scalar(s->to<int64_t>()) : *s;  // True counts as 1, as in PyTorch
    };
    Scalar start = b.is_none() ? Scalar(int64_t{0}) : num(a, "start");
    Scalar end = b.is_none() ? num(a, "end") : num(b, "end");
    return finish(eager::arange(start, end, num(step, "step"), f.dtype, f.device), f);
  }, nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = 1, nb::arg("kwargs"));
  // Note [Drawing on the host] (rill/_generator.py): PyTorch's normal_ transform, in place over `blocks` blocks
  // of 16 uniforms from `start` (kernels/cpu/box_muller.h). Here, not in numpy: numpy's vector log/cos/sin
  // differ from PyTorch's in the last bit.
  auto box_muller = [](auto d, int64_t start, int64_t blocks, double mean, double std) {
    RILL_CHECK(start >= 0 && blocks >= 0 && start + 16 * blocks <= static_cast<int64_t>(d.shape(0)), Index,
               "[_box_muller_blocks] blocks out of range");
    using T = std::remove_pointer_t<decltype(d.data())>;
    rill::cpu::box_muller_blocks(d.data() + start, blocks, static_cast<T>(mean), static_cast<T>(std));
  };
  m.def("_box_muller_blocks", [box_muller](nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu> d,
                                           int64_t start, int64_t blocks, double mean, double std) {
    box_muller(d, start, blocks, mean, std);
  }, nb::arg("d"), nb::arg("start"), nb::arg("blocks"), nb::arg("mean"), nb::arg("std"));
  m.def("_box_muller_blocks", [box_muller](nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu> d,
                                           int64_t start, int64_t blocks, double mean, double std) {
    box_muller(d, start, blocks, mean, std);
  }, nb::arg("d"), nb::arg("start"), nb::arg("blocks"), nb::arg("mean"), nb::arg("std"));
  m.def("manual_seed", [](int64_t seed) { eager::manual_seed(static_cast<uint64_t>(seed)); }, nb::arg("seed"));
  m.def("seed", []() {
    uint64_t s = static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    eager::manual_seed(s);
    return s;
  });
  m.def("initial_seed", []() { return eager::initial_seed(); });
  m.def("result_type", [](nb::handle a, nb::handle b) {
    std::vector<MetaSym> metas;
    std::vector<Scalar> scalars;
    for (nb::handle h : {a, b}) {
      if (nb::isinstance<Tensor>(h)) {
        metas.push_back(nb::cast<const Tensor&>(h).meta());
      } else {
        auto s = scalar_from_object(h);
        RILL_CHECK(s.has_value(), Type, "[result_type] expected Tensors or numbers");
        scalars.push_back(*s);
      }
    }
    return result_type(metas, scalars);
  }, nb::arg("tensor"), nb::arg("other"));
}

}  // namespace rill::py
