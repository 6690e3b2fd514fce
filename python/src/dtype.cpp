// rill.dtype objects and argument parsing helpers shared by the bindings.
#include <cmath>

#include "bind.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {
// Borrowed: the module's attributes own the dtype objects, so they die with the module.
nb::handle g_dtype_objects[kNumDTypes];
}

nb::handle dtype_object(DType t) { return g_dtype_objects[static_cast<int>(t)]; }

std::optional<DType> dtype_from_object(nb::handle obj) {
  if (nb::isinstance<PyDType>(obj)) return nb::inst_ptr<PyDType>(obj)->value;
  if (obj.is(reinterpret_cast<PyObject*>(&PyFloat_Type))) return DType::kFloat64;
  if (obj.is(reinterpret_cast<PyObject*>(&PyLong_Type))) return DType::kInt64;
  if (obj.is(reinterpret_cast<PyObject*>(&PyBool_Type))) return DType::kBool;
  return std::nullopt;
}

std::optional<Scalar> scalar_from_object(nb::handle obj) {
  PyObject* o = obj.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    RILL_CHECK(!overflow, Runtime, "Overflow when unpacking long: ", nb::str(obj).c_str(),
               " does not fit in int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  // numpy scalars and other numbers that are not tensors
  if (!nb::isinstance<Tensor>(obj) && !PySequence_Check(o)) {
    if (PyObject_HasAttrString(o, "dtype") && PyObject_HasAttrString(o, "item")) {
      nb::object v = obj.attr("item")();
      if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return scalar_from_object(v);
    }
  }
  return std::nullopt;
}

namespace {
int64_t int_from(nb::handle h, const char* op) {
  PyObject* o = h.ptr();
  RILL_CHECK(!PyBool_Check(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))), Type, "[", op,
             "] expected an int, got ", nb::inst_name(h).c_str());
  nb::object idx = nb::steal(PyNumber_Index(o));
  if (!idx) {
    PyErr_Clear();
    RILL_FAIL(Type, "[", op, "] expected an int, got ", nb::inst_name(h).c_str());
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  RILL_CHECK(!overflow, Value, "[", op, "] integer ", nb::str(h).c_str(), " does not fit in int64");
  return v;
}
}  // namespace

std::vector<int64_t> ints_from_object(nb::handle obj, const char* op) {
  PyObject* o = obj.ptr();
  if (PyTuple_Check(o) || PyList_Check(o)) {
    std::vector<int64_t> out;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    out.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) out.push_back(int_from(PySequence_Fast_GET_ITEM(o, i), op));
    return out;
  }
  if (nb::isinstance<Tensor>(obj)) RILL_FAIL(Type, "[", op, "] expected ints, got a Tensor; use .tolist()");
  return {int_from(obj, op)};
}

Shape sizes_from(const nb::args& args, const nb::kwargs& kwargs, const char* name, const char* op) {
  if (kwargs.size() == 0) return shape_from_args(args, op);
  RILL_CHECK(args.size() == 0 && kwargs.size() == 1 && kwargs.contains(name), Type, "[", op, "] takes the sizes "
             "either as arguments or as the keyword argument '", name, "', not both and nothing else");
  return ints_from_object(kwargs[name], op);
}

Shape shape_from_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && (PyTuple_Check(args[0].ptr()) || PyList_Check(args[0].ptr())))
    return ints_from_object(args[0], op);
  Shape out;
  out.reserve(args.size());
  for (nb::handle h : args) out.push_back(int_from(h, op));
  return out;
}

Device device_from_object(nb::handle obj, const char* op) {
  if (obj.is_none()) return Device{};
  if (nb::isinstance<Device>(obj)) return nb::cast<Device>(obj);
  if (nb::isinstance<nb::str>(obj)) return Device::parse(nb::cast<std::string>(obj));
  RILL_FAIL(Type, "[", op, "] expected a device such as 'cpu', got ", nb::inst_name(obj).c_str());
}

void init_dtype(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype", "A tensor element type, e.g. rill.float32.")
      .def_prop_ro("name", [](const PyDType& d) { return std::string(dtype_name(d.value)); },
                   "The dtype's name without the module: \"float32\".")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return dtype_is_floating(d.value); })
      .def_prop_ro("is_signed", [](const PyDType& d) { return dtype_is_signed(d.value); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return dtype_itemsize(d.value); })
      .def("__repr__", [](const PyDType& d) { return "rill." + std::string(dtype_name(d.value)); })
      .def("__reduce__", [](const PyDType& d) { return "_" + std::string(dtype_name(d.value)); });
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    nb::object obj = nb::cast(PyDType{t});
    m.attr(std::string(dtype_name(t)).c_str()) = obj;
    g_dtype_objects[i] = obj;
  }
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); }, nb::arg("type1"), nb::arg("type2"),
        "The dtype both operands are converted to, PyTorch's promotion table.");

  // Strict dtype mode (Note [Strict dtype mode] in ops/type_promotion.cpp); rill.strict_dtype() is in
  // python/rill/_strict.py.
  m.def("set_strict_dtype", [](std::optional<bool> on) { set_strict_dtype_setting(on ? (*on ? 1 : 0) : -1); },
        nb::arg("mode"),
        "Turn strict dtype mode on or off for the calling thread (None: follow the process default, "
        "RILL_STRICT_DTYPE).");
  m.def("is_strict_dtype", []() { return strict_dtype(); },
        "True when strict dtype mode is on for the calling thread.");
  m.def("_strict_dtype_setting", []() { return strict_dtype_setting(); },
        "The calling thread's own setting: 1 on, 0 off, -1 follows the process default.");
  m.def("_set_strict_dtype_setting", [](int s) { set_strict_dtype_setting(s); }, nb::arg("setting"));
  m.def("get_default_dtype", &default_float, "The default floating dtype (float32 unless set_default_dtype changed it).");
  m.def("set_default_dtype", &set_default_float, nb::arg("d"),
        "Make d (a floating dtype) what Python floats and factory functions without a dtype produce.");
  m.def("_check_strict_store", [](const std::string& op, DType value, DType dest, const std::string& what,
                                  const std::string& fix) { check_strict_store(op, value, dest, what, fix); },
        nb::arg("op"), nb::arg("value"), nb::arg("dest"), nb::arg("what"), nb::arg("fix"),
        "Under strict dtype mode, TypeError when value (a dtype) differs from dest.");

  nb::class_<Device>(m, "device", "A device: rill.device('cpu').")
      .def("__init__", [](Device* d, const std::string& s) { new (d) Device(Device::parse(s)); })
      .def_prop_ro("type", [](const Device& d) { return d.type == DeviceType::kCPU ? "cpu" : "cuda"; })
      .def_prop_ro("index", [](const Device& d) -> std::optional<int> {
        if (d.type == DeviceType::kCPU) return std::nullopt;
        return d.index;
      })
      .def("__repr__", [](const Device& d) { return "device(type='" + d.str() + "')"; })
      .def("__str__", &Device::str)
      .def("__eq__", [](const Device& a, nb::handle b) {
        if (nb::isinstance<nb::str>(b)) {
          // A string that names no device here ('cuda' in a CPU build, 'xyz') is simply not equal.
          try {
            return a == Device::parse(nb::cast<std::string>(b));
          } catch (const Error&) {
            return false;
          }
        }
        return nb::isinstance<Device>(b) && a == nb::cast<Device>(b);
      })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1000 + d.index; });
}

}  // namespace rill::py
