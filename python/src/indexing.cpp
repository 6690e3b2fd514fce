// Tensor.__getitem__ / __setitem__ with basic indices: ints, slices (with
// steps), None and Ellipsis. The result is a view.
#include "bind.h"

namespace rill::py {
namespace {

std::optional<int64_t> slice_part(PyObject* v, const char* what) {
  if (v == Py_None) return std::nullopt;
  nb::object idx = nb::steal(PyNumber_Index(v));
  if (!idx) {
    PyErr_Clear();
    RILL_FAIL(Type, "[getitem] slice ", what, " must be an int or None, got ", Py_TYPE(v)->tp_name);
  }
  return PyLong_AsLongLong(idx.ptr());
}

bool is_int_index(PyObject* o) {
  return !PyBool_Check(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !nb::isinstance<Tensor>(o)));
}

Tensor basic_index(const Tensor& t, nb::handle index) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(index.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(index)) items.push_back(h);
  } else {
    items.push_back(index);
  }
  int64_t consuming = 0;
  bool seen_ellipsis = false;
  for (nb::handle h : items) {
    PyObject* o = h.ptr();
    if (o == Py_Ellipsis) {
      RILL_CHECK(!seen_ellipsis, Index, "[getitem] an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    } else if (o == Py_None) {
    } else if (PySlice_Check(o) || is_int_index(o)) {
      ++consuming;
    } else if (nb::isinstance<Tensor>(h) || PyList_Check(o) || PyBool_Check(o)) {
      RILL_FAIL(NotImplemented, "[getitem] indexing with tensors, lists or bools (advanced indexing) comes with "
                "the op library (issue 5); use ints, slices, None and ... for now");
    } else {
      RILL_FAIL(Index, "[getitem] only integers, slices (`:`), ellipsis (`...`) and None are valid indices, got ",
                Py_TYPE(o)->tp_name);
    }
  }
  RILL_CHECK(consuming <= t.ndim(), Index, "[getitem] too many indices for tensor of dimension ", t.ndim());
  Tensor r = t;
  int64_t d = 0;
  for (nb::handle h : items) {
    PyObject* o = h.ptr();
    if (o == Py_Ellipsis) {
      d += t.ndim() - consuming;
    } else if (o == Py_None) {
      r = eager::unsqueeze(r, d);
      ++d;
    } else if (PySlice_Check(o)) {
      auto* s = reinterpret_cast<PySliceObject*>(o);
      auto step = slice_part(s->step, "step");
      RILL_CHECK(!step || *step > 0, Value, "[getitem] step must be greater than zero, got ", *step,
                 "; use .flip() to reverse");
      r = eager::slice(r, d, slice_part(s->start, "start"), slice_part(s->stop, "stop"), step ? *step : 1);
      ++d;
    } else {
      nb::object idx = nb::steal(PyNumber_Index(o));
      if (!idx) {
        PyErr_Clear();
        RILL_FAIL(Index, "[getitem] only integers, slices (`:`), ellipsis (`...`) and None are valid indices, got ",
                  Py_TYPE(o)->tp_name);
      }
      int overflow = 0;
      long long i = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
      RILL_CHECK(!overflow, Index, "[getitem] index ", nb::str(h).c_str(), " is out of range");
      r = eager::select(r, d, i);
    }
  }
  return r;
}

}  // namespace

void init_indexing(nb::class_<Tensor>& cls) {
  cls.def("__getitem__", [](const Tensor& t, nb::handle index) { return basic_index(t, index); });
  cls.def("__setitem__", [](const Tensor& t, nb::handle index, nb::handle value) {
    Tensor dst = basic_index(t, index);
    if (nb::isinstance<Tensor>(value)) {
      eager::copy_(dst, nb::cast<const Tensor&>(value));
      return;
    }
    auto s = scalar_from_object(value);
    RILL_CHECK(s.has_value(), Type, "[setitem] can assign a number or a Tensor, got ", nb::inst_name(value).c_str());
    eager::fill_(dst, *s);
  });
}

}  // namespace rill::py
