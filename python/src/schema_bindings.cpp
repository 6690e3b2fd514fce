// Bindings generated from op signatures: rill.<op>, Tensor.<op> and Tensor.<op>_
// for every op whose flags ask for them, parsed by one argument parser.
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
// `out=` where the op's flags allow it.
#include <Python.h>
#include <structmember.h>

#include "bind.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {

enum class Form : uint8_t { kFunction, kMethod, kInplace, kUpdate };  // kUpdate: rill._C.<op>_ of an update op

struct BoundOp {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  const OpSchema* op;
  Form form;
  std::string name;                 // the Python name (op name, with _ for the in-place form)
  std::vector<PyObject*> kw_names;  // interned argument names, as Python spells them
  PyObject* out_name;               // "out", interned
};

// The Python name of signature argument i in form.
std::string py_arg_name(const OpSchema& op, size_t i, Form form) {
  const std::string& n = op.signature.args[i].name;
  return (i == 0 && form == Form::kFunction && n == "self") ? "input" : n;
}

[[noreturn]] void bad_type(const BoundOp& b, size_t i, const char* expected, PyObject* got) {
  RILL_FAIL(Type, "[", b.name, "] argument '", py_arg_name(*b.op, i, b.form), "' must be ", expected, ", got ",
            Py_TYPE(got)->tp_name);
}

Scalar scalar_of(const BoundOp& b, size_t i, PyObject* v) {
  auto s = scalar_from_object(v);
  if (!s) bad_type(b, i, "a number", v);
  return *s;
}

AttrValue attr_of_object(const BoundOp& b, size_t i, PyObject* v) {
  const ArgSpec& a = b.op->signature.args[i];
  switch (a.type) {
    case ArgType::kInt:
      if (!PyLong_Check(v) || PyBool_Check(v)) bad_type(b, i, "an int", v);
      return static_cast<int64_t>(PyLong_AsLongLong(v));
    case ArgType::kIntList: return ints_from_object(v, b.name.c_str());
    case ArgType::kFloat:
      if (!PyFloat_Check(v) && !(PyLong_Check(v) && !PyBool_Check(v))) bad_type(b, i, "a float", v);
      return PyFloat_AsDouble(v);
    case ArgType::kBool:
      if (!PyBool_Check(v)) bad_type(b, i, "a bool", v);
      return v == Py_True;
    case ArgType::kScalarType: {
      auto t = dtype_from_object(v);
      if (!t) bad_type(b, i, "a rill.dtype", v);
      return *t;
    }
    case ArgType::kStr: {
      if (!PyUnicode_Check(v)) bad_type(b, i, "a str", v);
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(v, &n);
      return std::string(s, static_cast<size_t>(n));
    }
    default: RILL_ASSERT(false, "not an attr type");
  }
  return false;
}

// A signature default as an attr value or a scalar (str defaults are strings, dtype defaults dtype names).
AttrValue attr_of_default(const BoundOp& b, size_t i) {
  const ArgSpec& a = b.op->signature.args[i];
  const ArgDefault& d = *a.default_value;
  if (auto* v = std::get_if<bool>(&d)) return *v;
  if (auto* v = std::get_if<int64_t>(&d)) return a.type == ArgType::kFloat ? AttrValue(static_cast<double>(*v))
                                                                           : AttrValue(*v);
  if (auto* v = std::get_if<double>(&d)) return *v;
  if (auto* v = std::get_if<std::vector<int64_t>>(&d)) return *v;
  RILL_ASSERT(a.type == ArgType::kStr, "[", b.name, "] default of '", a.name, "' is not supported");
  return std::get<std::string>(d);
}

Scalar scalar_of_default(const ArgDefault& d) {
  if (auto* v = std::get_if<bool>(&d)) return Scalar(*v);
  if (auto* v = std::get_if<int64_t>(&d)) return Scalar(*v);
  return Scalar(std::get<double>(d));
}

const Tensor& tensor_of(const BoundOp& b, size_t i, PyObject* v) {
  nb::handle h(v);
  if (!nb::isinstance<Tensor>(h)) bad_type(b, i, "a Tensor", v);
  return nb::cast<const Tensor&>(h);
}

// Parse args/kwnames into slots (one per signature argument, null where not given) and out.
void parse(const BoundOp& b, PyObject* const* args, size_t nargs, PyObject* kwnames, PyObject** slots,
           PyObject*& out) {
  const Signature& sig = b.op->signature;
  size_t positional = 0;
  while (positional < sig.args.size() && !sig.args[positional].kwarg_only) ++positional;
  if (nargs > positional) {
    const size_t shown = b.form == Form::kFunction ? 0 : 1;  // Python does not count self
    RILL_FAIL(Type, "[", b.name, "] takes ", positional - shown, " positional argument", positional - shown == 1 ? "" :
              "s", " but ", nargs - shown, " were given");
  }
  for (size_t i = 0; i < nargs; ++i) slots[i] = args[i];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* value = args[nargs + static_cast<size_t>(k)];
    size_t found = sig.args.size();
    for (size_t i = 0; i < b.kw_names.size() && found == sig.args.size(); ++i)
      if (b.kw_names[i] == key) found = i;  // keyword names are usually interned: a pointer compare
    for (size_t i = 0; i < b.kw_names.size() && found == sig.args.size(); ++i)
      if (b.kw_names[i] && PyUnicode_Compare(b.kw_names[i], key) == 0) found = i;
    if (found == sig.args.size()) {
      if (b.out_name && PyUnicode_Compare(b.out_name, key) == 0) {
        out = value;
        continue;
      }
      RILL_FAIL(Type, "[", b.name, "] got an unexpected keyword argument '", PyUnicode_AsUTF8(key), "'; it takes ",
                sig.str());
    }
    if (slots[found]) RILL_FAIL(Type, "[", b.name, "] got multiple values for argument '", PyUnicode_AsUTF8(key), "'");
    slots[found] = value;
  }
}

PyObject* to_python(std::vector<Tensor>&& outs, int num_outputs) {
  if (num_outputs == 1) return nb::cast(std::move(outs[0])).release().ptr();
  nb::list l;
  for (Tensor& t : outs) l.append(nb::cast(std::move(t)));
  return num_outputs < 0 ? l.release().ptr() : nb::tuple(l).release().ptr();
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  try {
    const OpSchema& op = *b.op;
    const Signature& sig = op.signature;
    const size_t nargs = PyVectorcall_NARGS(nargsf);
    constexpr size_t kMaxArgs = 16;
    PyObject* slots[kMaxArgs] = {};
    PyObject* out = nullptr;
    parse(b, args, nargs, kwnames, slots, out);

    constexpr size_t kInline = 4;
    Tensor inputs_buf[kInline];
    std::vector<Tensor> inputs_heap;
    size_t n_inputs = 0;
    auto push_input = [&](const Tensor& t) {
      if (n_inputs < kInline && inputs_heap.empty()) {
        inputs_buf[n_inputs++] = t;
        return;
      }
      if (inputs_heap.empty()) inputs_heap.assign(inputs_buf, inputs_buf + n_inputs);
      inputs_heap.push_back(t);
      ++n_inputs;
    };
    Scalar scalars[kMaxArgs];
    size_t n_scalars = 0;
    std::vector<AttrValue> attrs;
    for (size_t i = 0; i < sig.args.size(); ++i) {
      const ArgSpec& a = sig.args[i];
      PyObject* v = slots[i];
      if (v == Py_None && a.optional) v = nullptr;
      if (!v && !a.default_value && !a.optional)
        RILL_FAIL(Type, "[", b.name, "] missing required argument '", py_arg_name(op, i, b.form), "'");
      switch (a.type) {
        case ArgType::kTensor:
          if (v) push_input(tensor_of(b, i, v));
          break;
        case ArgType::kTensorList: {
          if (!v) break;
          nb::handle seq(v);
          if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq)) bad_type(b, i, "a list of Tensors", v);
          for (nb::handle t : seq) push_input(tensor_of(b, i, t.ptr()));
          break;
        }
        case ArgType::kScalar: scalars[n_scalars++] = v ? scalar_of(b, i, v) : scalar_of_default(*a.default_value); break;
        default:
          if (!v && a.optional && (!a.default_value || std::holds_alternative<std::monostate>(*a.default_value)))
            attrs.push_back(std::monostate{});  // None
          else
            attrs.push_back(v ? attr_of_object(b, i, v) : attr_of_default(b, i));
          break;
      }
    }
    std::span<const Tensor> inputs = inputs_heap.empty() ? std::span<const Tensor>(inputs_buf, n_inputs)
                                                         : std::span<const Tensor>(inputs_heap);
    std::span<const Scalar> numbers(scalars, n_scalars);
    AttrsSym interned = attrs.empty() ? empty_attrs() : make_attrs(std::move(attrs));

    if (b.form == Form::kInplace) {
      const Tensor& x = inputs[0];
      check_no_internal_overlap(x, op.name);
      for (size_t i = 1; i < inputs.size(); ++i) check_no_partial_overlap(x, inputs[i], op.name);
      eager::inplace(op, inputs, numbers, interned);
      Py_INCREF(args[0]);
      return args[0];
    }
    if (b.form == Form::kUpdate) {
      eager::update_in_place(op, inputs, numbers, interned);
      Py_RETURN_NONE;
    }
    if (out && out != Py_None) {
      nb::handle oh(out);
      RILL_CHECK(nb::isinstance<Tensor>(oh), Type, "[", b.name, "] argument 'out' must be a Tensor, got ",
                 Py_TYPE(out)->tp_name);
      const Tensor& o = nb::cast<const Tensor&>(oh);
      RILL_CHECK(!eager::grad_enabled() || (!eager::should_record(inputs) && !o.impl()->requires_grad()),
                 Runtime, "[", op.name, "] functions with out=... arguments don't support automatic differentiation, "
                 "but one of the arguments requires grad; call it under rill.no_grad() or drop out=");
      check_no_internal_overlap(o, op.name);
      eager::call_into(op, inputs, numbers, interned, o);
      o.storage()->bump_version();
      Py_INCREF(out);
      return out;
    }
    if (sig.num_outputs == 1) return nb::cast(eager::call1(op, inputs, numbers, interned)).release().ptr();
    return to_python(eager::call(op, inputs, numbers, interned), sig.num_outputs);
  } catch (const Error& e) {
    set_python_error(e);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// The Python-facing signature, e.g. "(input, beta=1, threshold=20, *, out=None)".
std::string text_signature(const BoundOp& b) {
  const Signature& sig = b.op->signature;
  std::string s = "(";
  bool star = false;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgSpec& a = sig.args[i];
    if (i) s += ", ";
    if (i == 0 && (b.form == Form::kMethod || b.form == Form::kInplace)) {
      s += "self";
      continue;
    }
    if (a.kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    s += py_arg_name(*b.op, i, b.form);
    if (a.default_value) s += "=...";
    else if (a.optional) s += "=None";
  }
  if (b.out_name) s += star ? ", out=None" : (sig.args.empty() ? "*, out=None" : ", *, out=None");
  return s + ")";
}

PyObject* get_text_signature(PyObject* self, void*) {
  return PyUnicode_FromString(text_signature(*reinterpret_cast<BoundOp*>(self)).c_str());
}
PyObject* get_name(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<BoundOp*>(self)->name.c_str());
}
PyObject* get_doc(PyObject* self, void*) {
  const BoundOp& b = *reinterpret_cast<BoundOp*>(self);
  return PyUnicode_FromString((b.name + text_signature(b) + "\n\n" + b.op->doc + "\n\nSignature: " +
                               b.op->signature.str()).c_str());
}
PyObject* get_schema(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<BoundOp*>(self)->op->signature.str().c_str());
}

PyGetSetDef g_getset[] = {
    {"__text_signature__", get_text_signature, nullptr, nullptr, nullptr},
    {"__name__", get_name, nullptr, nullptr, nullptr},
    {"__qualname__", get_name, nullptr, nullptr, nullptr},
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
  b->kw_names.~vector();
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

// A bound form of op; it lives as long as the interpreter (like a module function).
PyObject* make_bound(const OpSchema& op, Form form) {
  auto* b = PyObject_New(BoundOp, op_type());
  new (&b->name) std::string(op.name + (form == Form::kInplace || form == Form::kUpdate ? "_" : ""));
  new (&b->kw_names) std::vector<PyObject*>();
  b->vectorcall = call;
  b->op = &op;
  b->form = form;
  b->out_name = (form == Form::kFunction && op.flags.out) ? PyUnicode_InternFromString("out") : nullptr;
  RILL_ASSERT(op.signature.args.size() < 16, "[", op.name, "] more than 15 arguments");
  for (size_t i = 0; i < op.signature.args.size(); ++i) {
    const ArgSpec& a = op.signature.args[i];
    RILL_ASSERT(a.type != ArgType::kScalar || !a.optional, "[", op.name, "] an optional Scalar ('", a.name,
                "') can't be passed in an op call; make it a float? or int? attr");
    // self of a method is never a keyword.
    b->kw_names.push_back(i == 0 && form != Form::kFunction ? nullptr
                                                            : PyUnicode_InternFromString(py_arg_name(op, i, form).c_str()));
  }
  return reinterpret_cast<PyObject*>(b);
}

void install(nb::handle owner, const std::string& name, PyObject* fn) {
  RILL_ASSERT(!PyObject_HasAttrString(owner.ptr(), name.c_str()), "'", name, "' is bound twice: by hand and from "
              "its signature");
  RILL_ASSERT(PyObject_SetAttrString(owner.ptr(), name.c_str(), fn) == 0, "can't bind ", name);
  Py_DECREF(fn);
}

}  // namespace

void init_schema_bindings(nb::module_& m, nb::class_<Tensor>& cls) {
  nb::list functions, nn_functional;  // what rill and rill.nn.functional export
  for (const OpSchema* op : ops::all()) {
    RILL_ASSERT(!op->flags.nn_functional || op->flags.function, "[", op->name, "] nn_functional needs function");
    if (op->flags.function) {
      install(m, op->name, make_bound(*op, Form::kFunction));
      functions.append(op->name);
    }
    if (op->flags.nn_functional) nn_functional.append(op->name);
    if (op->flags.method) install(cls, op->name, make_bound(*op, Form::kMethod));
    if (op->flags.inplace) install(cls, op->name + "_", make_bound(*op, Form::kInplace));
    if (op->flags.updates_in_place) install(m, op->name + "_", make_bound(*op, Form::kUpdate));
  }
  m.attr("_schema_functions") = nb::tuple(functions);
  m.attr("_schema_nn_functional") = nb::tuple(nn_functional);
}

}  // namespace rill::py
