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

// A 0-dim integer tensor indexes like an int (PyTorch selects with it, giving a view); other tensors,
// including bool and uint8 ones (masks in PyTorch), are advanced indices.
bool is_int_tensor_scalar(nb::handle h) {
  if (!nb::isinstance<Tensor>(h)) return false;
  const Tensor& t = nb::cast<const Tensor&>(h);
  return t.ndim() == 0 && !dtype_is_floating(t.dtype()) && t.dtype() != DType::kBool && t.dtype() != DType::kUInt8;
}

bool is_int_index(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) return true;
  return PyIndex_Check(o) && (!nb::isinstance<Tensor>(h) || is_int_tensor_scalar(h));
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
    } else if (PySlice_Check(o) || is_int_index(h)) {
      ++consuming;
    } else if (nb::isinstance<Tensor>(h) && dtype_is_floating(nb::cast<const Tensor&>(h).dtype())) {
      RILL_FAIL(Index, "[getitem] tensors used as indices must be integer or bool tensors, got ",
                dtype_name(nb::cast<const Tensor&>(h).dtype()));
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
      r = autograd::unsqueeze(r, d);
      ++d;
    } else if (PySlice_Check(o)) {
      auto* s = reinterpret_cast<PySliceObject*>(o);
      auto step = slice_part(s->step, "step");
      RILL_CHECK(!step || *step > 0, Value, "[getitem] step must be greater than zero, got ", *step,
                 "; use .flip() to reverse");
      r = autograd::slice(r, d, slice_part(s->start, "start"), slice_part(s->stop, "stop"), step ? *step : 1);
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
      r = autograd::select(r, d, i);
    }
  }
  return r;
}

}  // namespace

void init_indexing(nb::class_<Tensor>& cls) {
  cls.def("__getitem__", [](const Tensor& t, nb::handle index) { return basic_index(t, index); },
          nb::arg("index").none());
  cls.def("__setitem__", [](const Tensor& t, nb::handle index, nb::handle value) {
    Tensor dst = basic_index(t, index);
    if (nb::isinstance<Tensor>(value)) {
      // As in PyTorch, leading size-1 dims of the value beyond the destination's rank are dropped:
      // x[0] = y[None] works.
      Tensor src = nb::cast<const Tensor&>(value);
      while (src.ndim() > dst.ndim() && src.shape()[0] == 1) src = autograd::select(src, 0, 0);
      autograd::copy_(dst, src);
      return;
    }
    auto s = scalar_from_object(value);
    RILL_CHECK(s.has_value(), Type, "[setitem] can assign a number or a Tensor, got ", nb::inst_name(value).c_str());
    autograd::fill_(dst, *s);
  }, nb::arg("index").none(), nb::arg("value").none());
}

}  // namespace rill::py
