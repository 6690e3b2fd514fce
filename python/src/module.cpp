// rill._C: the extension module. Each C++ area binds itself in its own file.
#include "bind.h"
#include "rill/util/error.h"

NB_MODULE(_C, m) {
  m.doc() = "rill's C++ core";
  // Python objects that C++ owns (gradient hooks, through a tensor a module global keeps) are left alone
  // once the interpreter is finalizing, when releasing them is no longer safe (PyCallable in autograd.cpp);
  // nanobind would list each of them, and the types they reach, as a leak at every exit.
  nb::set_leak_warnings(false);
  rill::autograd::install();  // ops record their gradients from here on (Note [Recording] in eager/grad_mode.h)
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const rill::Error& e) {
      rill::py::set_python_error(e);
    }
  });
  rill::py::init_dtype(m);
  rill::py::init_tensor(m);
  rill::py::init_runtime(m);
  rill::py::init_vm(m);
  rill::py::init_odb(m);
  rill::py::init_nn(m);
  rill::py::init_nn_functional(m);
  rill::py::init_distributed(m);
  rill::py::init_graph(m);
}
