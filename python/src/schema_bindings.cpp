// Bindings generated from op signatures: rill.<op>, Tensor.<op>, Tensor.<op>_ and
// rill.nn.functional.<op> for every op whose flags ask for them, a name's overloads
// tried in order, parsed by one argument parser.
//
// Note [Bindings from signatures]
// Each bound form is a `rill._C.op` object: a callable holding its schema and form
// (function, method, in-place method). It is called through vectorcall, so
// arguments arrive as a C array plus the tuple of keyword names, and the parser
// fills one slot per signature argument without building a tuple or dict. The
// type is a method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR), so `x.relu()`
// calls it with x first and no bound-method object, as for a Python function.
// Argument names are PyTorch's: the signature's `self` is `input` in the
// function form; positional-or-keyword and keyword-only as the signature says;
// `out=` where the op's flags allow it. A composite op (no kernel: logsumexp) is
// bound the same way: eager::call runs its forward (Note [Composite ops] in
// src/rill/ops/reduce.cpp), and out= writes that result into out.
#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "bind.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {

// Note [Overloads]
// Several ops may share one Python name: remainder(Tensor self, Tensor other), remainder_scalar(Tensor self,
// Scalar other) and rremainder_scalar(Scalar self, Tensor other) are all rill.remainder, as PyTorch's overloads
// of one name are (an op joins its name's overloads by OpSchema::overload_of). A call tries them in
// registration order: the first whose arguments all parse (names, counts) and have its types wins, like
// PyTorch's PythonArgParser; none: a TypeError listing what each overload accepts. A name with one overload
// skips the type test and raises the conversion's own error naming the argument.
//
// The nn.functional form of an op with OpFlags::nn_inplace takes one more argument, `inplace=False`, after the
// signature's: True runs the in-place form and returns input.
//
// Registration order is the order of trial, so an op whose arguments another overload's would also accept is
// registered first: max_dim(Tensor self, int dim, ...) before max(Tensor self, int[1]? dim=None, ...), so that
// max(x, 0) is the values and indices along dim 0. PyTorch's older argument lists of a name are overloads too,
// one op each sharing a kernel and a gradient rule: var(Tensor self, int[1]? dim=None, *, float? correction=None,
// bool keepdim=False), var_dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) and
// var_unbiased(Tensor self, bool unbiased=True); a call giving unbiased and correction fits none of them. A name
// may also take one op of another name as an overload (kBorrowedOverloads: max(input, other) is maximum, as
// PyTorch's max.other).
//
// Or take it under the name's own argument list, matched by argument name (kOverloadsByArgumentName), where
// PyTorch has one signature with optional arguments and rill an op per argument pattern: clamp is
// (input, min=None, max=None), so clamp(x, None, hi) and clamp(x, max=hi) are clamp_max(x, hi); an argument
// the op lacks must be left out or None, one the name lacks takes its default (clamp_min(x, 0.5) is
// clamp_scalar(x, 0.5), max None). Such an overload's slots are put in its op's order before the type test.

// Note [Named outputs]
// An op whose signature names its outputs (`-> (Tensor values, Tensor indices)`) returns them in a named tuple,
// one type per Python name, as PyTorch's torch.return_types.max: rill.max(x, 0).indices. The types are
// collections.namedtuple classes, so what tells a named tuple by its _fields (default_collate, rill.save) sees
// one; they are kept by name in rill._C._return_types, which rill.return_types exports, so they pickle by name.
// An instance is made by tuple.__new__ of the type, without running the namedtuple's Python __new__.

enum class Form : uint8_t {
  kFunction,
  kMethod,
  kInplace,
  kUpdate,        // rill._C.<op>_ of an update op
  kNNFunctional,  // rill.nn.functional.<op> with inplace=False
};

constexpr size_t kMaxScalars = 4;  // Scalar arguments of one signature

// One signature a bound name accepts, with its Python argument names.
struct Overload {
  const OpSchema* op;
  std::vector<PyObject*> kw_names;  // interned, one per signature argument (null: self of a method), then inplace
  size_t positional = 0;            // how many arguments may come positionally
  bool out = false;                 // takes out=
  // Bound under another op's argument list (Note [Overloads]): that op, whose names, kw_names and positional
  // are, and for each argument of op the Python argument that gives it, or -1 (its default). Null and empty:
  // op's own list.
  const OpSchema* arguments = nullptr;
  std::vector<int8_t> from_argument;
  // Interned attrs kept for the next call (attrs_of; the GIL orders the writes): those of a call that gives none
  // (x.sum()), and the last call's (x.sum(0) in a loop: no interning, whose lookup takes a lock).
  mutable AttrsSym default_attrs;
  mutable AttrsSym last_attrs;
};

struct BoundOp {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Form form;
  std::string name;                 // the Python name (op name, with _ for the in-place form)
  std::vector<Overload> overloads;  // tried in order (Note [Overloads])
  PyObject* out_name;               // "out", interned
  PyObject* module;                 // where it is installed, for __module__ and pickling by name
  PyObject* result_type;            // the named tuple of named outputs (Note [Named outputs]); null: none
};

// Whether the form is called on a tensor, which Python passes as self (Tensor.<op>, Tensor.<op>_).
bool takes_self(Form form) { return form == Form::kMethod || form == Form::kInplace; }

// Tensor's Python type, set once: nb::isinstance<Tensor> and nb::cast search nanobind's type map on every call.
PyTypeObject* g_tensor_type = nullptr;

bool is_tensor(PyObject* v) { return PyObject_TypeCheck(v, g_tensor_type); }

// The Python name of signature argument i in form.
std::string py_arg_name(const OpSchema& op, size_t i, Form form) {
  const std::string& n = op.signature.args[i].name;
  const bool function = form == Form::kFunction || form == Form::kNNFunctional;
  return (i == 0 && function && n == "self") ? "input" : n;
}

// The op a conversion error talks about, for its argument names.
struct Call {
  const BoundOp& b;
  const OpSchema& op;
};

[[noreturn]] void bad_type(const Call& c, size_t i, const char* expected, PyObject* got) {
  RILL_FAIL(Type, "[", c.b.name, "] argument '", py_arg_name(c.op, i, c.b.form), "' must be ", expected, ", got ",
            Py_TYPE(got)->tp_name);
}

Scalar scalar_of(const Call& c, size_t i, PyObject* v) {
  auto s = scalar_from_object(v);
  if (!s) bad_type(c, i, "a number", v);
  return *s;
}

// An int, or an object that converts to one losslessly (__index__: numpy integers), but not a bool.
bool is_int(PyObject* v) {
  return !PyBool_Check(v) && (PyLong_Check(v) || (PyIndex_Check(v) && !PyFloat_Check(v)));
}

AttrValue attr_of_object(const Call& c, size_t i, PyObject* v) {
  const ArgSpec& a = c.op.signature.args[i];
  switch (a.type) {
    case ArgType::kInt: {
      if (!is_int(v)) bad_type(c, i, "an int", v);
      nb::object index = nb::steal(PyNumber_Index(v));
      if (!index.is_valid()) throw nb::python_error();
      int overflow = 0;
      const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
      RILL_CHECK(!overflow, Value, "[", c.b.name, "] argument '", py_arg_name(c.op, i, c.b.form),
                 "' does not fit in int64");
      return static_cast<int64_t>(n);
    }
    case ArgType::kIntList: return ints_from_object(v, c.b.name.c_str());
    case ArgType::kFloat:
      if (!PyFloat_Check(v) && !(PyLong_Check(v) && !PyBool_Check(v))) bad_type(c, i, "a float", v);
      return PyFloat_AsDouble(v);
    case ArgType::kBool:
      if (!PyBool_Check(v)) bad_type(c, i, "a bool", v);
      return v == Py_True;
    case ArgType::kScalarType: {
      auto t = dtype_from_object(v);
      if (!t) bad_type(c, i, "a rill.dtype", v);
      return *t;
    }
    case ArgType::kStr: {
      if (!PyUnicode_Check(v)) bad_type(c, i, "a str", v);
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(v, &n);
      return std::string(s, static_cast<size_t>(n));
    }
    default: RILL_ASSERT(false, "not an attr type");
  }
  return false;
}

// A signature default as an attr value or a scalar (str defaults are strings, dtype defaults dtype names).
AttrValue attr_of_default(const Call& c, size_t i) {
  const ArgSpec& a = c.op.signature.args[i];
  const ArgDefault& d = *a.default_value;
  if (auto* v = std::get_if<bool>(&d)) return *v;
  if (auto* v = std::get_if<int64_t>(&d)) return a.type == ArgType::kFloat ? AttrValue(static_cast<double>(*v))
                                                                           : AttrValue(*v);
  if (auto* v = std::get_if<double>(&d)) return *v;
  if (auto* v = std::get_if<std::vector<int64_t>>(&d)) return *v;
  RILL_ASSERT(a.type == ArgType::kStr, "[", c.b.name, "] default of '", a.name, "' is not supported");
  return std::get<std::string>(d);
}

// A Scalar? defaulting to None is Scalar::none() (Note [Arguments of an op call]).
Scalar scalar_of_default(const ArgDefault& d) {
  if (std::holds_alternative<std::monostate>(d)) return Scalar::none();
  if (auto* v = std::get_if<bool>(&d)) return Scalar(*v);
  if (auto* v = std::get_if<int64_t>(&d)) return Scalar(*v);
  return Scalar(std::get<double>(d));
}

const Tensor& tensor_of(const Call& c, size_t i, PyObject* v) {
  if (!is_tensor(v)) bad_type(c, i, "a Tensor", v);
  return *nb::inst_ptr<Tensor>(v);
}

// Parse args/kwnames into slots (one per Python argument of ov, null where not given) and out. A mismatch
// (too many positional arguments, an unknown or repeated keyword) raises when strict, else returns false.
bool parse(const BoundOp& b, const Overload& ov, PyObject* const* args, size_t nargs, PyObject* kwnames,
           PyObject** slots, PyObject*& out, bool strict) {
  const size_t n = ov.kw_names.size();
  if (nargs > ov.positional) {
    if (!strict) return false;
    const size_t shown = takes_self(b.form) ? 1 : 0;  // Python does not count self
    RILL_FAIL(Type, "[", b.name, "] takes ", ov.positional - shown, " positional argument",
              ov.positional - shown == 1 ? "" : "s", " but ", nargs - shown, " were given");
  }
  for (size_t i = 0; i < nargs; ++i) slots[i] = args[i];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* value = args[nargs + static_cast<size_t>(k)];
    size_t found = n;
    for (size_t i = 0; i < n && found == n; ++i)
      if (ov.kw_names[i] == key) found = i;  // keyword names are usually interned: a pointer compare
    for (size_t i = 0; i < n && found == n; ++i)
      if (ov.kw_names[i] && PyUnicode_Compare(ov.kw_names[i], key) == 0) found = i;
    if (found == n) {
      if (ov.out && PyUnicode_Compare(b.out_name, key) == 0) {
        out = value;
        continue;
      }
      if (!strict) return false;
      RILL_FAIL(Type, "[", b.name, "] got an unexpected keyword argument '", PyUnicode_AsUTF8(key), "'; it takes ",
                ov.op->signature.str());
    }
    if (slots[found]) {
      if (!strict) return false;
      RILL_FAIL(Type, "[", b.name, "] got multiple values for argument '", PyUnicode_AsUTF8(key), "'");
    }
    slots[found] = value;
  }
  return true;
}

// Whether v can be passed as an argument of type a (Note [Overloads]); the conversion may still raise for
// what it finds inside (a list holding a string).
bool has_type(const ArgSpec& a, PyObject* v) {
  if (v == Py_None) return a.optional;
  switch (a.type) {
    case ArgType::kTensor: return is_tensor(v);
    case ArgType::kTensorList: return PyList_Check(v) || PyTuple_Check(v);
    // A Tensor has __index__, but fits a Tensor argument, not an int: max(x, y) is maximum, not max(x, dim=y).
    case ArgType::kInt: return is_int(v) && !is_tensor(v);
    case ArgType::kIntList: return (is_int(v) && !is_tensor(v)) || PyList_Check(v) || PyTuple_Check(v);
    case ArgType::kFloat: return PyFloat_Check(v) || (PyLong_Check(v) && !PyBool_Check(v));
    case ArgType::kBool: return PyBool_Check(v);
    case ArgType::kScalarType: return dtype_from_object(v).has_value();
    case ArgType::kScalar:
      return PyFloat_Check(v) || PyLong_Check(v) || (!is_tensor(v) && scalar_from_object(v).has_value());
    case ArgType::kStr: return PyUnicode_Check(v);
  }
  return false;
}

// Whether the parsed slots (in ov's op's order) fit ov: every required argument given, every given one of its
// type.
bool fits(const Overload& ov, PyObject* const* slots) {
  const auto& sig_args = ov.op->signature.args;
  const size_t n = ov.arguments ? sig_args.size() : ov.kw_names.size();
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = slots[i];
    if (i >= sig_args.size()) {  // inplace
      if (v && !PyBool_Check(v)) return false;
      continue;
    }
    const ArgSpec& a = sig_args[i];
    if (!v) {
      if (!a.default_value && !a.optional) return false;
      continue;
    }
    if (!has_type(a, v)) return false;
  }
  return true;
}

// The slots of an overload bound under another op's arguments (Note [Overloads]) put in its op's order, into
// own; null when an argument its op lacks is given something other than None.
PyObject* const* own_slots(const Overload& ov, PyObject* const* slots, PyObject** own) {
  uint32_t read = 0;  // the Python arguments op reads, as bits
  for (size_t j = 0; j < ov.from_argument.size(); ++j) {
    const int k = ov.from_argument[j];
    own[j] = k < 0 ? nullptr : slots[k];
    if (k >= 0) read |= 1u << k;
  }
  for (size_t i = 0; i < ov.kw_names.size(); ++i)
    if (!(read >> i & 1u) && slots[i] && slots[i] != Py_None) return nullptr;
  return own;
}

// What a call passed, as types: "(Tensor, int, alpha=float)".
std::string given_types(PyObject* const* args, size_t nargs, PyObject* kwnames) {
  std::string s = "(";
  for (size_t i = 0; i < nargs; ++i) s += std::string(i ? ", " : "") + Py_TYPE(args[i])->tp_name;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k)
    s += std::string(nargs || k ? ", " : "") + PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)) + "=" +
         Py_TYPE(args[nargs + static_cast<size_t>(k)])->tp_name;
  return s + ")";
}

// The argument of ov's op that Python argument i gives, or null where its op lacks it (an overload bound under
// another op's arguments, Note [Overloads]).
const ArgSpec* op_argument(const Overload& ov, size_t i) {
  if (!ov.arguments) return &ov.op->signature.args[i];
  for (size_t j = 0; j < ov.from_argument.size(); ++j)
    if (ov.from_argument[j] == static_cast<int>(i)) return &ov.op->signature.args[j];
  return nullptr;
}

// The op whose argument list ov is bound under.
const OpSchema& arguments_of(const Overload& ov) { return ov.arguments ? *ov.arguments : *ov.op; }

// One overload with its argument types, as an error lists it: "(Tensor input, Scalar other, *, Tensor out=None)";
// an argument its op lacks is "None".
std::string typed_signature(const BoundOp& b, const Overload& ov) {
  const Signature& sig = arguments_of(ov).signature;
  const bool method = takes_self(b.form);
  std::string s = "(";
  bool star = false;
  for (size_t i = method ? 1 : 0; i < sig.args.size(); ++i) {
    const ArgSpec* a = op_argument(ov, i);
    if (s.size() > 1) s += ", ";
    if (sig.args[i].kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    const std::string name = py_arg_name(arguments_of(ov), i, b.form);
    if (!a) s += "None " + name + "=None";
    else s += std::string(arg_type_name(a->type)) + (a->optional ? "? " : " ") + name;
    if (a && (a->default_value || a->optional)) s += "=...";
  }
  if (b.form == Form::kNNFunctional) s += std::string(s.size() > 1 ? ", " : "") + "bool inplace=False";
  if (ov.out) s += std::string(s.size() > 1 ? ", " : "") + (star ? "" : "*, ") + "Tensor out=None";
  return s + ")";
}

[[noreturn]] void no_overload_fits(const BoundOp& b, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  std::string accepted;
  for (const Overload& ov : b.overloads) accepted += "\n  " + b.name + typed_signature(b, ov);
  const bool method = takes_self(b.form);
  RILL_FAIL(Type, "[", b.name, "] received an invalid combination of arguments: got ",
            given_types(args + (method ? 1 : 0), nargs - (method ? 1 : 0), kwnames), "; it takes one of:",
            accepted);
}

// Outputs as Python returns them: a Tensor, a list (Tensor[]), a tuple, or a result_type named tuple.
PyObject* to_python(std::vector<Tensor>&& outs, int num_outputs, PyObject* result_type) {
  if (num_outputs == 1) return nb::cast(std::move(outs[0])).release().ptr();
  nb::list l;
  for (Tensor& t : outs) l.append(nb::cast(std::move(t)));
  if (num_outputs < 0) return l.release().ptr();
  nb::tuple items(l);
  if (!result_type) return items.release().ptr();
  nb::tuple args = nb::make_tuple(items);  // tuple.__new__(result_type, items) (Note [Named outputs])
  return PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(result_type), args.ptr(), nullptr);
}

// The call's attrs (every argument not a tensor or a Scalar), interned: the overload's defaults when none is
// given, else the last call's when equal (Overload::last_attrs).
AttrsSym attrs_of(const Call& c, const Overload& ov, PyObject* const* slots) {
  const auto& args = c.op.signature.args;
  bool given = false;
  for (size_t i = 0; i < args.size(); ++i)
    given = given || (slots[i] && !args[i].is_tensor() && args[i].type != ArgType::kScalar);
  if (!given && ov.default_attrs) return ov.default_attrs;
  std::vector<AttrValue> attrs;
  attrs.reserve(c.op.attr_names.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    if (a.is_tensor() || a.type == ArgType::kScalar) continue;
    PyObject* v = slots[i] == Py_None && a.optional ? nullptr : slots[i];
    if (!v && a.optional && (!a.default_value || std::holds_alternative<std::monostate>(*a.default_value)))
      attrs.push_back(std::monostate{});  // None
    else
      attrs.push_back(v ? attr_of_object(c, i, v) : attr_of_default(c, i));
  }
  if (!given) return ov.default_attrs = attrs.empty() ? empty_attrs() : make_attrs(std::move(attrs));
  if (!ov.last_attrs || ov.last_attrs->values != attrs) ov.last_attrs = make_attrs(std::move(attrs));
  return ov.last_attrs;
}

// Run ov's op on the parsed slots in b's form.
PyObject* run(const BoundOp& b, const Overload& ov, PyObject* const* slots, PyObject* out, PyObject* const* args) {
  const OpSchema& op = *ov.op;
  const Signature& sig = op.signature;
  const Call c{b, op};
  // Most calls have one tensor: it is read in place, in its Python object (alive for the call); a second one
  // copies them into a vector.
  const Tensor* first = nullptr;
  std::vector<Tensor> several;
  size_t n_inputs = 0;
  auto push_input = [&](const Tensor& t) {
    if (n_inputs++ == 0) {
      first = &t;
      return;
    }
    if (several.empty()) {
      several.reserve(4);
      several.push_back(*first);
    }
    several.push_back(t);
  };
  Scalar scalars[kMaxScalars];
  size_t n_scalars = 0;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgSpec& a = sig.args[i];
    PyObject* v = slots[i];
    if (v == Py_None && a.optional) v = nullptr;
    if (!v && !a.default_value && !a.optional)
      RILL_FAIL(Type, "[", b.name, "] missing required argument '", py_arg_name(op, i, b.form), "'");
    switch (a.type) {
      case ArgType::kTensor:
        if (v) push_input(tensor_of(c, i, v));
        break;
      case ArgType::kTensorList: {
        if (!v) break;
        nb::handle seq(v);
        if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq)) bad_type(c, i, "a list of Tensors", v);
        for (nb::handle t : seq) push_input(tensor_of(c, i, t.ptr()));
        break;
      }
      case ArgType::kScalar:  // a Scalar? given None, or left out with no default but None, is absent
        scalars[n_scalars++] = v ? scalar_of(c, i, v) : a.default_value ? scalar_of_default(*a.default_value)
                                                                        : Scalar::none();
        break;
      default: break;  // attrs_of
    }
  }
  std::span<const Tensor> inputs =
      n_inputs > 1 ? std::span<const Tensor>(several) : std::span<const Tensor>(first, n_inputs);
  std::span<const Scalar> numbers(scalars, n_scalars);
  if (n_scalars == 1 && n_inputs == 1) check_number_operand(op, inputs[0], numbers[0]);
  const AttrsSym interned = attrs_of(c, ov, slots);

  PyObject* inplace_arg = b.form == Form::kNNFunctional ? slots[sig.args.size()] : nullptr;
  RILL_CHECK(!inplace_arg || PyBool_Check(inplace_arg), Type, "[", b.name, "] argument 'inplace' must be a bool, got ",
             Py_TYPE(inplace_arg)->tp_name);
  const bool inplace = b.form == Form::kInplace || inplace_arg == Py_True;
  if (inplace) {
    const Tensor& x = inputs[0];
    check_no_internal_overlap(x, op.name);
    for (size_t i = 1; i < inputs.size(); ++i) check_no_partial_overlap(x, inputs[i], op.name);
    eager::inplace(op, inputs, numbers, interned);
    PyObject* self = b.form == Form::kInplace ? args[0] : slots[0];
    Py_INCREF(self);
    return self;
  }
  if (b.form == Form::kUpdate) {
    eager::update_in_place(op, inputs, numbers, interned);
    Py_RETURN_NONE;
  }
  if (out && out != Py_None) {
    RILL_CHECK(is_tensor(out), Type, "[", b.name, "] argument 'out' must be a Tensor, got ", Py_TYPE(out)->tp_name);
    const Tensor& o = *nb::inst_ptr<Tensor>(out);
    RILL_CHECK(!eager::grad_enabled() || (!eager::should_record(inputs) && !o.impl()->requires_grad()),
               Runtime, "[", op.name, "] functions with out=... arguments don't support automatic differentiation, "
               "but one of the arguments requires grad; call it under rill.no_grad() or drop out=");
    check_no_internal_overlap(o, op.name);
    eager::call_into(op, inputs, numbers, interned, o);
    o.storage()->bump_version();
    Py_INCREF(out);
    return out;
  }
  if (op.flags.view) return nb::cast(eager::view_call(op, inputs[0], interned)).release().ptr();
  if (sig.num_outputs == 1) return nb::cast(eager::call1(op, inputs, numbers, interned)).release().ptr();
  return to_python(eager::call(op, inputs, numbers, interned), sig.num_outputs,
                   sig.output_names.empty() ? nullptr : b.result_type);
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  try {
    const size_t nargs = PyVectorcall_NARGS(nargsf);
    constexpr size_t kMaxArgs = 16;
    PyObject* slots[kMaxArgs];  // cleared per overload, as far as it reads (a fixed-size clear is a slow rep stos)
    PyObject* out = nullptr;
    if (b.overloads.size() == 1) {
      std::fill_n(slots, b.overloads[0].kw_names.size(), nullptr);
      parse(b, b.overloads[0], args, nargs, kwnames, slots, out, true);
      return run(b, b.overloads[0], slots, out, args);
    }
    PyObject* own[kMaxArgs];
    for (const Overload& ov : b.overloads) {  // Note [Overloads]
      std::fill_n(slots, ov.kw_names.size(), nullptr);
      out = nullptr;
      if (!parse(b, ov, args, nargs, kwnames, slots, out, false)) continue;
      PyObject* const* given = ov.arguments ? own_slots(ov, slots, own) : slots;
      if (given && fits(ov, given)) return run(b, ov, given, out, args);
    }
    no_overload_fits(b, args, nargs, kwnames);
  } catch (const Error& e) {
    set_python_error(e);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// The Python-facing signature of one overload, e.g. "(input, beta=1, threshold=20, *, out=None)".
std::string text_signature(const BoundOp& b, const Overload& ov) {
  const Signature& sig = arguments_of(ov).signature;
  std::string s = "(";
  bool star = false;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgSpec* a = op_argument(ov, i);
    if (i) s += ", ";
    if (i == 0 && (b.form == Form::kMethod || b.form == Form::kInplace)) {
      s += "self";
      continue;
    }
    if (sig.args[i].kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    s += py_arg_name(arguments_of(ov), i, b.form);
    if (a && a->default_value) s += "=...";
    else if (!a || a->optional) s += "=None";
  }
  if (b.form == Form::kNNFunctional) s += ", inplace=False";
  if (ov.out) s += star ? ", out=None" : (sig.args.empty() ? "*, out=None" : ", *, out=None");
  return s + ")";
}

// One overload: its Python signature; several: None (inspect reads __rill_overloads__ instead).
PyObject* get_text_signature(PyObject* self, void*) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  if (b.overloads.size() > 1) Py_RETURN_NONE;
  return PyUnicode_FromString(text_signature(b, b.overloads[0]).c_str());
}
PyObject* get_overloads(PyObject* self, void*) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  nb::list l;
  for (const Overload& ov : b.overloads) l.append(nb::str(text_signature(b, ov).c_str()));
  return nb::tuple(l).release().ptr();
}
PyObject* get_name(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<BoundOp*>(self)->name.c_str());
}
// A method's qualified name is Tensor.<name>.
PyObject* get_qualname(PyObject* self, void*) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  const bool method = takes_self(b.form);
  return PyUnicode_FromString(((method ? "Tensor." : "") + b.name).c_str());
}
PyObject* get_module(PyObject* self, void*) {
  PyObject* m = reinterpret_cast<BoundOp*>(self)->module;
  Py_INCREF(m);
  return m;
}
// Pickled and copied as a global, by name (copy.deepcopy of a module holding F.gelu).
PyObject* reduce(PyObject* self, PyObject*) { return get_qualname(self, nullptr); }

PyMethodDef g_methods[] = {
    {"__reduce__", reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};
PyObject* get_doc(PyObject* self, void*) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  std::string doc;
  for (const Overload& ov : b.overloads) doc += b.name + typed_signature(b, ov) + "\n    " + ov.op->doc + "\n";
  return PyUnicode_FromString(doc.c_str());
}
PyObject* get_schema(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<BoundOp*>(self)->overloads[0].op->signature.str().c_str());
}

PyGetSetDef g_getset[] = {
    {"__text_signature__", get_text_signature, nullptr, nullptr, nullptr},
    {"__rill_overloads__", get_overloads, nullptr, nullptr, nullptr},
    {"__name__", get_name, nullptr, nullptr, nullptr},
    {"__qualname__", get_qualname, nullptr, nullptr, nullptr},
    {"__module__", get_module, nullptr, nullptr, nullptr},
    {"__doc__", get_doc, nullptr, nullptr, nullptr},
    {"__rill_schema__", get_schema, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// x.relu when not called at once (f = x.relu): a bound method.
PyObject* descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* repr(PyObject* self) {
  return PyUnicode_FromFormat("<rill op %s>", reinterpret_cast<BoundOp*>(self)->name.c_str());
}

void dealloc(PyObject* self) {
  auto* b = reinterpret_cast<BoundOp*>(self);
  PyTypeObject* type = Py_TYPE(self);
  b->name.~basic_string();
  b->overloads.~vector();
  PyObject_Free(self);
  Py_DECREF(type);  // a heap type's instances own a reference to it
}

PyMemberDef g_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BoundOp, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyTypeObject* op_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_descr_get, reinterpret_cast<void*>(descr_get)},
        {Py_tp_getset, g_getset},
        {Py_tp_methods, g_methods},
        {Py_tp_members, g_members},
        {Py_tp_repr, reinterpret_cast<void*>(repr)},
        {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
        {0, nullptr},
    };
    PyType_Spec spec = {"rill._C.op", static_cast<int>(sizeof(BoundOp)), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR, slots};
    auto* t = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
    RILL_ASSERT(t != nullptr, "rill._C.op type");
    return t;
  }();
  return type;
}

Overload make_overload(const OpSchema& op, Form form) {
  Overload ov{&op, {}, 0, form == Form::kFunction && op.flags.out, nullptr, {}, {}, {}};
  RILL_ASSERT(op.signature.args.size() < 15 && op.num_scalars <= static_cast<int>(kMaxScalars), "[", op.name,
              "] more than 14 arguments or ", kMaxScalars, " Scalars");
  for (size_t i = 0; i < op.signature.args.size(); ++i) {
    const ArgSpec& a = op.signature.args[i];
    if (!a.kwarg_only && ov.positional == i) ++ov.positional;
    // self of a method is never a keyword.
    const bool self = i == 0 && form != Form::kFunction && form != Form::kNNFunctional;
    ov.kw_names.push_back(self ? nullptr : PyUnicode_InternFromString(py_arg_name(op, i, form).c_str()));
  }
  if (form == Form::kNNFunctional) {
    if (ov.positional == ov.kw_names.size()) ++ov.positional;
    ov.kw_names.push_back(PyUnicode_InternFromString("inplace"));
  }
  return ov;
}

// Names that take an op of another name as an overload under their own argument list, matched by argument
// name (Note [Overloads]): clamp(x, None, hi) is clamp_max(x, hi), clamp_min(x, 0.5) is clamp_scalar(x, 0.5).
constexpr std::pair<const char*, const char*> kOverloadsByArgumentName[] = {
    {"clamp", "clamp_min"}, {"clamp", "clamp_max"}, {"clamp_min", "clamp_scalar"}, {"clamp_max", "clamp_scalar"}};

// The Python name op is bound under (its own, or the one it is an overload of).
const std::string& bound_name(const OpSchema& op) { return op.overload_of.empty() ? op.name : op.overload_of; }

// Whether op is bound under first's arguments: first's name takes op by argument name.
bool under_arguments_of(const OpSchema& first, const OpSchema& op) {
  for (const auto& [name, op_name] : kOverloadsByArgumentName)
    if (bound_name(first) == name && op.name == op_name) return true;
  return false;
}

// op bound under names's argument list, matched by name (Note [Overloads]).
Overload make_overload_under(const OpSchema& op, const OpSchema& names, Form form) {
  RILL_ASSERT(form != Form::kNNFunctional, "[", op.name, "] an nn.functional form under another op's arguments");
  Overload ov = make_overload(names, form);
  ov.op = &op;
  ov.arguments = &names;
  ov.out = form == Form::kFunction && op.flags.out;
  for (const ArgSpec& a : op.signature.args) {
    const int k = names.signature.find(a.name);
    RILL_ASSERT(k >= 0 || a.default_value || a.optional, "[", op.name, "] argument '", a.name, "' is not one of ",
                names.name, "'s and has no default");
    ov.from_argument.push_back(static_cast<int8_t>(k));
  }
  return ov;
}

// The named tuple type of a name's outputs (Note [Named outputs]), or null when no overload names them.
PyObject* named_result_type(const std::string& name, const std::vector<const OpSchema*>& ops) {
  for (const OpSchema* op : ops) {
    const std::vector<std::string>& names = op->signature.output_names;
    if (names.empty()) continue;
    std::string fields;
    for (const std::string& n : names) fields += (fields.empty() ? "" : " ") + n;
    return return_type(name, fields).ptr();
  }
  return nullptr;
}

// A bound form of a name's overloads; it lives as long as the interpreter (like a module function).
PyObject* make_bound(const std::string& name, const std::vector<const OpSchema*>& ops, Form form,
                     const char* module) {
  auto* b = PyObject_New(BoundOp, op_type());
  new (&b->name) std::string(name + (form == Form::kInplace || form == Form::kUpdate ? "_" : ""));
  new (&b->overloads) std::vector<Overload>();
  b->vectorcall = call;
  b->form = form;
  b->out_name = PyUnicode_InternFromString("out");
  b->module = PyUnicode_InternFromString(module);
  b->result_type = named_result_type(name, ops);
  for (const OpSchema* op : ops)
    b->overloads.push_back(under_arguments_of(*ops[0], *op) ? make_overload_under(*op, *ops[0], form)
                                                            : make_overload(*op, form));
  return reinterpret_cast<PyObject*>(b);
}

// PyTorch's other names of bound functions: rill.<alias> takes the same overloads as rill.<name>.
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"multiply", "mul"},  {"divide", "div"},    {"true_divide", "div"},     {"not_equal", "ne"},
    {"less", "lt"},       {"less_equal", "le"}, {"greater", "gt"},          {"greater_equal", "ge"},
    {"fix", "trunc"},     {"arctan2", "atan2"}, {"concat", "cat"},          {"concatenate", "cat"},
};

// ... and Tensor.<alias>, Tensor.<alias>_ too.
constexpr std::pair<const char*, const char*> kAliasesWithMethods[] = {{"clip", "clamp"}};

// PyTorch names that take one op of another name as an overload too, tried after their own: max(input, other)
// is maximum(input, other), as PyTorch's max.other.
constexpr std::pair<const char*, const char*> kBorrowedOverloads[] = {{"max", "maximum"}, {"min", "minimum"}};

// Every named tuple type made so far, by name (Note [Named outputs]); it lives as long as the interpreter.
PyObject* g_return_types = nullptr;

void install(nb::handle owner, const std::string& name, PyObject* fn) {
  RILL_ASSERT(!PyObject_HasAttrString(owner.ptr(), name.c_str()), "'", name, "' is bound twice: by hand and from "
              "its signature");
  RILL_ASSERT(PyObject_SetAttrString(owner.ptr(), name.c_str(), fn) == 0, "can't bind ", name);
  Py_DECREF(fn);
}

}  // namespace

nb::handle return_type(const std::string& name, const std::string& fields) {
  if (!g_return_types) g_return_types = PyDict_New();
  if (PyObject* type = PyDict_GetItemString(g_return_types, name.c_str())) {
    RILL_ASSERT(nb::cast<std::string>(nb::str(" ").attr("join")(nb::handle(type).attr("_fields"))) == fields,
                "[", name, "] two result types: '", fields, "' and another");
    return type;
  }
  nb::object type = nb::module_::import_("collections").attr("namedtuple")(name, fields);
  type.attr("__module__") = "rill.return_types";
  RILL_ASSERT(PyDict_SetItemString(g_return_types, name.c_str(), type.ptr()) == 0, "can't keep ", name);
  return type;  // the dict holds it
}

void init_schema_bindings(nb::module_& m, nb::class_<Tensor>& cls) {
  g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // Each Python name's overloads per form, in registration order (Note [Overloads]).
  struct Forms {
    std::vector<const OpSchema*> function, method, inplace, update, nn_functional;
  };
  std::vector<std::string> names;
  std::unordered_map<std::string, Forms> by_name;
  for (const OpSchema* op : ops::all()) {
    const std::string& name = bound_name(*op);
    auto [it, added] = by_name.try_emplace(name);
    if (added) names.push_back(name);
    Forms& f = it->second;
    if (op->flags.function) f.function.push_back(op);
    if (op->flags.method) f.method.push_back(op);
    if (op->flags.inplace) f.inplace.push_back(op);
    if (op->flags.updates_in_place) f.update.push_back(op);
    if (op->flags.nn_functional) f.nn_functional.push_back(op);
    RILL_ASSERT(!op->flags.nn_inplace || op->flags.nn_functional, "[", op->name, "] nn_inplace needs nn_functional");
  }
  for (const auto& [name, op_name] : kBorrowedOverloads) {  // Note [Overloads]
    const OpSchema& op = ops::get(op_name);
    Forms& f = by_name.at(name);
    if (op.flags.function) f.function.push_back(&op);
    if (op.flags.method) f.method.push_back(&op);
  }
  for (const auto& [name, op_name] : kOverloadsByArgumentName) {  // Note [Overloads]
    const OpSchema& op = ops::get(op_name);
    Forms& f = by_name.at(name);
    if (op.flags.function) f.function.push_back(&op);
    if (op.flags.method) f.method.push_back(&op);
    if (op.flags.inplace) f.inplace.push_back(&op);
  }
  nb::list functions;
  nb::dict nn_functional;  // what rill and rill.nn.functional export
  for (const std::string& name : names) {
    const Forms& f = by_name.at(name);
    if (!f.function.empty()) {
      install(m, name, make_bound(name, f.function, Form::kFunction, "rill"));
      functions.append(name);
    }
    if (!f.method.empty()) install(cls, name, make_bound(name, f.method, Form::kMethod, "rill._C"));
    if (!f.inplace.empty()) install(cls, name + "_", make_bound(name, f.inplace, Form::kInplace, "rill._C"));
    if (!f.update.empty()) install(m, name + "_", make_bound(name, f.update, Form::kUpdate, "rill._C"));
    if (f.nn_functional.empty()) continue;
    const char* functional = "rill.nn.functional";
    if (f.nn_functional[0]->flags.nn_inplace)
      nn_functional[name.c_str()] = nb::steal(make_bound(name, f.nn_functional, Form::kNNFunctional, functional));
    else if (f.nn_functional == f.function)
      nn_functional[name.c_str()] = m.attr(name.c_str());
    else
      nn_functional[name.c_str()] = nb::steal(make_bound(name, f.nn_functional, Form::kFunction, functional));
  }
  for (const auto& [alias, name] : kAliases) {
    install(m, alias, make_bound(alias, by_name.at(name).function, Form::kFunction, "rill"));
    functions.append(alias);
  }
  for (const auto& [alias, name] : kAliasesWithMethods) {
    const Forms& f = by_name.at(name);
    install(m, alias, make_bound(alias, f.function, Form::kFunction, "rill"));
    functions.append(alias);
    install(cls, alias, make_bound(alias, f.method, Form::kMethod, "rill._C"));
    install(cls, std::string(alias) + "_", make_bound(alias, f.inplace, Form::kInplace, "rill._C"));
  }
  m.attr("_schema_functions") = nb::tuple(functions);
  if (!g_return_types) g_return_types = PyDict_New();
  m.attr("_return_types") = nb::borrow(g_return_types);
  m.attr("_schema_nn_functional") = nn_functional;
}

}  // namespace rill::py
