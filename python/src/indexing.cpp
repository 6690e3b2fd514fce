// Tensor.__getitem__ / __setitem__: basic indices (ints, slices with steps, None,
// Ellipsis) become views; integer tensors, lists and bool masks are advanced
// indices handled by eager::index / index_put_ (Note [Advanced indexing] in
// src/rill/autograd/index.cpp). Ints are applied as selects first, as in PyTorch,
// so they never count as advanced indices.
#include "bind.h"
#include "rill/ops/type_promotion.h"

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

// An advanced index as a tensor: tensors as they are, Python bools as 0-dim masks, lists (and other
// sequences) through rill.tensor. Raises IndexError for anything else.
std::optional<Tensor> advanced_index(nb::handle h) {
  PyObject* o = h.ptr();
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    RILL_CHECK(!dtype_is_floating(t.dtype()), Index, "[getitem] tensors used as indices must be long, int, byte or "
               "bool tensors, got ", dtype_name(t.dtype()));
    return t;
  }
  if (PyBool_Check(o)) return eager::full({}, Scalar(o == Py_True), DType::kBool);
  if (PyList_Check(o) || PyTuple_Check(o) || (PySequence_Check(o) && !PyUnicode_Check(o) && !PyBytes_Check(o))) {
    nb::object tensor_fn = nb::module_::import_("rill").attr("tensor");
    Tensor t = nb::cast<Tensor>(tensor_fn(h));
    RILL_CHECK(!dtype_is_floating(t.dtype()) || t.numel() == 0, Index, "[getitem] tensors used as indices must be "
               "long, int, byte or bool tensors, got a sequence of floats");
    return t.numel() == 0 ? eager::to_dtype(t, DType::kInt64) : t;
  }
  return std::nullopt;
}

/** A basic-indexed view and, per remaining dim, the advanced index for it (undefined: the whole dim). */
struct Indexed {
  Tensor view;
  std::vector<Tensor> entries;
  bool advanced = false;
};

Indexed apply_index(const Tensor& t, nb::handle index) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(index.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(index)) items.push_back(h);
  } else {
    items.push_back(index);
  }
  // Resolve advanced indices first, to count the dims each item consumes.
  std::vector<std::optional<Tensor>> adv(items.size());
  int64_t consuming = 0;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < items.size(); ++i) {
    PyObject* o = items[i].ptr();
    if (o == Py_Ellipsis) {
      RILL_CHECK(!seen_ellipsis, Index, "[getitem] an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    } else if (o == Py_None) {
    } else if (PySlice_Check(o) || is_int_index(items[i])) {
      ++consuming;
    } else if ((adv[i] = advanced_index(items[i]))) {
      const Tensor& a = *adv[i];
      consuming += (a.dtype() == DType::kBool || a.dtype() == DType::kUInt8) ? a.ndim() : 1;
    } else {
      RILL_FAIL(Index, "[getitem] only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                "are valid indices, got ", Py_TYPE(o)->tp_name);
    }
  }
  RILL_CHECK(consuming <= t.ndim(), Index, "[getitem] too many indices for tensor of dimension ", t.ndim());
  Indexed r{t, {}, false};
  int64_t d = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    PyObject* o = items[i].ptr();
    if (adv[i]) {
      const Tensor& a = *adv[i];
      r.entries.push_back(a);
      r.advanced = true;
      d += (a.dtype() == DType::kBool || a.dtype() == DType::kUInt8) ? a.ndim() : 1;
    } else if (o == Py_Ellipsis) {
      for (int64_t k = 0; k < t.ndim() - consuming; ++k) r.entries.emplace_back();
      d += t.ndim() - consuming;
    } else if (o == Py_None) {
      r.view = eager::unsqueeze(r.view, d);
      r.entries.emplace_back();
      ++d;
    } else if (PySlice_Check(o)) {
      auto* s = reinterpret_cast<PySliceObject*>(o);
      auto step = slice_part(s->step, "step");
      RILL_CHECK(!step || *step > 0, Value, "[getitem] step must be greater than zero, got ", *step,
                 "; use .flip() to reverse");
      r.view = eager::slice(r.view, d, slice_part(s->start, "start"), slice_part(s->stop, "stop"),
                               step ? *step : 1);
      r.entries.emplace_back();
      ++d;
    } else {
      nb::object idx = nb::steal(PyNumber_Index(o));
      if (!idx) {
        PyErr_Clear();
        RILL_FAIL(Index, "[getitem] only integers, slices (`:`), ellipsis (`...`) and None are valid indices, got ",
                  Py_TYPE(o)->tp_name);
      }
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
      RILL_CHECK(!overflow, Index, "[getitem] index ", nb::str(items[i]).c_str(), " is out of range");
      r.view = eager::select(r.view, d, v);
    }
  }
  return r;
}

}  // namespace

void init_indexing(nb::class_<Tensor>& cls) {
  cls.def("__getitem__", [](const Tensor& t, nb::handle index) {
    Indexed r = apply_index(t, index);
    return r.advanced ? eager::index(r.view, r.entries) : r.view;
  }, nb::arg("index").none());
  cls.def("__setitem__", [](const Tensor& t, nb::handle index, nb::handle value) {
    Indexed r = apply_index(t, index);
    Tensor dst = r.view;
    if (r.advanced) {
      Tensor v;
      if (nb::isinstance<Tensor>(value)) {
        v = nb::cast<Tensor>(value);
        check_strict_store("setitem", v.dtype(), t.dtype(), "value", "value");
      } else {
        auto s = scalar_from_object(value);
        RILL_CHECK(s.has_value(), Type, "[setitem] can assign a number or a Tensor, got ",
                   nb::inst_name(value).c_str());
        check_strict_number("setitem", *s, t.dtype());
        v = eager::full({}, *s, t.dtype());
      }
      eager::index_put_(dst, r.entries, v, /*accumulate=*/false);
      return;
    }
    if (nb::isinstance<Tensor>(value)) {
      // As in PyTorch, leading size-1 dims of the value beyond the destination's rank are dropped:
      // x[0] = y[None] works.
      Tensor src = nb::cast<const Tensor&>(value);
      check_strict_store("setitem", src.dtype(), t.dtype(), "value", "value");
      while (src.ndim() > dst.ndim() && src.shape()[0] == 1) src = eager::select(src, 0, 0);
      eager::copy_(dst, src);
      return;
    }
    auto s = scalar_from_object(value);
    RILL_CHECK(s.has_value(), Type, "[setitem] can assign a number or a Tensor, got ", nb::inst_name(value).c_str());
    check_strict_number("setitem", *s, t.dtype());
    eager::fill_(dst, *s);
  }, nb::arg("index").none(), nb::arg("value").none());
}

}  // namespace rill::py
