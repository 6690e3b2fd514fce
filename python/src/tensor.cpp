// rill.Tensor: properties, views, conversions and element access.
#include "bind.h"
#include "rill/eager/trace.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {

nb::object element_to_python(const char* p, DType t) {
  return visit_dtype(t, [&](auto tag) -> nb::object {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      return nb::bool_(v);
    } else if constexpr (kIsFloating<T>) {
      return nb::float_(static_cast<double>(static_cast<OpMath<T>>(v)));
    } else {
      return nb::int_(static_cast<int64_t>(v));
    }
  });
}

nb::object to_list(const char* p, const TensorMeta& m, int64_t dim) {
  if (dim == m.ndim()) return element_to_python(p, m.dtype);
  int64_t n = m.shape[dim];
  int64_t step = m.strides[dim] * dtype_itemsize(m.dtype);
  nb::list out;
  for (int64_t i = 0; i < n; ++i) out.append(to_list(p + i * step, m, dim + 1));
  return out;
}

// A dim of t for size(dim)/stride(dim). normalize_dim accepts 0 and -1 for a 0-dim tensor (as ops that
// reduce over "dim 0" of a scalar do), but a 0-dim tensor has no size or stride to read.
int64_t dim_arg(const Tensor& t, int64_t dim, const char* op) {
  RILL_CHECK(t.ndim() > 0, Index, "[", op, "] dimension specified as ", dim, " but tensor has no dimensions");
  return normalize_dim(dim, t.ndim(), op);
}

}  // namespace

nb::object tensor_item(const Tensor& t) {
  RILL_CHECK(t.numel() == 1, Runtime, "[item] a Tensor with ", t.numel(),
             " elements cannot be converted to Scalar; use .tolist() for several values");
  alignas(16) char value[16];
  read_element(t, value);
  return element_to_python(value, t.dtype());
}

void init_tensor(nb::module_& m) {
  auto cls = nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr(), "A multi-dimensional array on a device.");
  cls.def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_prop_ro("device", [](const Tensor& t) { return t.device(); })
      .def_prop_ro("ndim", [](const Tensor& t) { return t.ndim(); })
      .def_prop_ro("_shape", [](const Tensor& t) {
        const Shape& s = t.shape();
        PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(s.size()));
        for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(s[i]));
        return nb::steal<nb::tuple>(tup);
      })
      .def("dim", [](const Tensor& t) { return t.ndim(); })
      .def("numel", [](const Tensor& t) { return t.numel(); })
      .def("nelement", [](const Tensor& t) { return t.numel(); })
      .def("element_size", [](const Tensor& t) { return dtype_itemsize(t.dtype()); })
      .def_prop_ro("itemsize", [](const Tensor& t) { return dtype_itemsize(t.dtype()); })
      .def_prop_ro("nbytes", [](const Tensor& t) { return t.numel() * dtype_itemsize(t.dtype()); })
      .def("_size", [](const Tensor& t, int64_t dim) { return t.shape()[dim_arg(t, dim, "size")]; })
      .def("stride", [](const Tensor& t, std::optional<int64_t> dim) -> nb::object {
            if (dim) return nb::int_(t.strides()[dim_arg(t, *dim, "stride")]);
            return nb::tuple(nb::cast(t.strides()));
          }, nb::arg("dim") = nb::none())
      .def("storage_offset", [](const Tensor& t) { return t.offset(); })
      .def("is_contiguous", [](const Tensor& t) { return t.is_contiguous(); })
      .def("data_ptr", [](const Tensor& t) {
            wait_readable(t);
            t.storage()->mark_exported();
            return reinterpret_cast<uintptr_t>(t.data_ptr());
          })
      .def("is_floating_point", [](const Tensor& t) { return dtype_is_floating(t.dtype()); })
      .def("item", &tensor_item, "The value of a one-element tensor as a Python number (a sync point).")
      .def("tolist", [](const Tensor& t) {
            wait_readable(t);
            if (t.numel() == 0 && t.ndim() > 0) return to_list(nullptr, *t.meta(), 0);
            return to_list(static_cast<const char*>(t.data_ptr()), *t.meta(), 0);
          }, "Nested Python lists of the values (a sync point).")
      .def("_is_same", [](const Tensor& a, const Tensor& b) { return a.is_same(b); })
      .def("_shares_storage", [](const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); })
      // --- views ---
      .def("view", [](const Tensor& t, nb::args a, nb::kwargs kw) {
            if (a.size() == 1 && dtype_from_object(a[0]))
              RILL_FAIL(NotImplemented, "[view] reinterpreting as another dtype is not supported; use .to(dtype)");
            return eager::view(t, sizes_from(a, kw, "size", "view"));
          })
      .def("reshape", [](const Tensor& t, nb::args a, nb::kwargs kw) {
            return eager::reshape(t, sizes_from(a, kw, "shape", "reshape"));
          })
      .def("swapaxes", [](const Tensor& t, int64_t d0, int64_t d1) { return eager::transpose(t, d0, d1); },
           nb::arg("axis0"), nb::arg("axis1"))
      .def_prop_ro("T", [](const Tensor& t) {
            std::vector<int64_t> dims(t.ndim());
            for (int64_t i = 0; i < t.ndim(); ++i) dims[i] = t.ndim() - 1 - i;
            return eager::permute(t, dims);
          })
      .def_prop_ro("mT", [](const Tensor& t) {
            RILL_CHECK(t.ndim() >= 2, Runtime, "[mT] tensor.mT is only supported on matrices or batches of "
                       "matrices. Got ", t.ndim(), "-D tensor.");
            return eager::transpose(t, -2, -1);
          })
      .def("permute", [](const Tensor& t, nb::args a, nb::kwargs kw) {
            return eager::permute(t, sizes_from(a, kw, "dims", "permute"));
          })
      .def("expand", [](const Tensor& t, nb::args a, nb::kwargs kw) {
            if (kw.contains("implicit")) {  // PyTorch's tracing flag: no effect on the result
              RILL_CHECK(nb::isinstance<nb::bool_>(kw["implicit"]), Type, "[expand] implicit must be a bool");
              nb::del(kw["implicit"]);
            }
            return eager::expand(t, sizes_from(a, kw, "size", "expand"));
          })
      .def("expand_as", [](const Tensor& t, const Tensor& o) { return eager::expand(t, o.shape()); },
           nb::arg("other"))
      .def("flatten", [](const Tensor& t, int64_t s, int64_t e) { return eager::flatten(t, s, e); },
           nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def("contiguous", [](const Tensor& t) { return eager::contiguous(t); })
      .def("clone", [](const Tensor& t) { return eager::clone(t); })
            // In-place methods return self (the same Python object), as in PyTorch.
      .def("copy_", [](const Tensor& t, const Tensor& src, bool) -> const Tensor& {
            check_strict_store("copy_", src.dtype(), t.dtype(), "src", "src");
            return eager::copy_(t, src);
          },  // non_blocking: a CPU copy is ordered by the VM either way
           nb::arg("src"), nb::arg("non_blocking") = false, nb::rv_policy::reference_internal)
      .def("fill_", [](const Tensor& t, nb::handle v) -> const Tensor& {
            auto s = scalar_from_object(v);
            if (!s && nb::isinstance<Tensor>(v)) {
              const Tensor& vt = nb::cast<const Tensor&>(v);
              RILL_CHECK(vt.ndim() == 0, Runtime, "[fill_] only supports 0-dimension value tensor but got tensor with ",
                         vt.ndim(), " dimensions");
              check_strict_store("fill_", vt.dtype(), t.dtype(), "value", "value");
              return eager::copy_(t, vt);
            }
            RILL_CHECK(s.has_value(), Type, "[fill_] expected a number, got ", nb::inst_name(v).c_str());
            check_strict_number("fill_", *s, t.dtype());
            return eager::fill_(t, *s);
          }, nb::arg("value"), nb::rv_policy::reference_internal)
      .def("zero_", [](const Tensor& t) -> const Tensor& { return eager::fill_(t, Scalar(int64_t{0})); },
           nb::rv_policy::reference_internal)
      .def("_to_dtype", [](const Tensor& t, DType d, bool copy) {
            return copy && t.dtype() == d ? eager::clone(t) : eager::to_dtype(t, d);
          })
      .def("_copy_now", [](const Tensor& t, DType d) {
            // A copy finished before returning: the source may be memory the caller changes next
            // (a numpy array passed to rill.tensor), which the VM does not track. Inside nn.Graph.build it runs
            // eagerly all the same: host data makes a constant, which the trace binds as a variable.
            struct Untraced {
              eager::TraceSink* sink = eager::set_trace_sink(nullptr);
              ~Untraced() { eager::set_trace_sink(sink); }
            } untraced;
            Tensor out = t.dtype() == d ? eager::clone(t) : eager::to_dtype(t, d);
            wait_readable(out);
            return out;
          });
  init_indexing(cls);
  init_interop(m, cls);
  init_ops(m, cls);
  init_shape(m, cls);
  init_math_ops(m, cls);
  init_autograd(m, cls);
  init_schema_bindings(m, cls);
  install_number_slots(cls);  // last: a later def of __add__ & co. would reset the slots
}

}  // namespace rill::py
