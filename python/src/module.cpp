// rill._C: the extension module. Each C++ area binds itself in its own file.
#include "bind.h"
#include "rill/util/error.h"

NB_MODULE(_C, m) {
  m.doc() = "rill's C++ core";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const rill::Error& e) {
      switch (e.kind()) {
        case rill::ErrorKind::kType: PyErr_SetString(PyExc_TypeError, e.what()); break;
        case rill::ErrorKind::kValue: PyErr_SetString(PyExc_ValueError, e.what()); break;
        case rill::ErrorKind::kIndex: PyErr_SetString(PyExc_IndexError, e.what()); break;
        case rill::ErrorKind::kNotImplemented: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
        case rill::ErrorKind::kRuntime: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
      }
    }
  });
  rill::py::init_dtype(m);
  rill::py::init_tensor(m);
  rill::py::init_runtime(m);
  rill::py::init_vm(m);
  rill::py::init_odb(m);
  rill::py::init_nn(m);
  rill::py::init_nn_functional(m);
}
