// rill.odb (python/rill/odb.py) and rill.vm_trace: stop and restart VM threads, a
// place for a debugger to stop, and the VM trace recorder (docs/architecture.md §7).
#include "bind.h"  // Python.h first

#include "rill/vm/park.h"
#include "rill/vm/trace.h"
#include "rill/vm/virtual_machine.h"

namespace rill::py {

void init_odb(nb::module_& m) {
  // Stopping waits for the thread to park, which may take a kernel's time: without the GIL, which
  // the VM may need meanwhile (to free numpy-backed memory, to name a failed op's Python line).
  m.def("_odb_stop_scheduler", []() {
    nb::gil_scoped_release release;
    vm::stop_scheduler();
  }, "Stop the VM scheduler at its next safe point; returns once it is parked.");
  m.def("_odb_restart_scheduler", &vm::restart_scheduler, "Restart a stopped VM scheduler.");
  m.def("_odb_stop_worker", [](int thread_id) {
    nb::gil_scoped_release release;
    vm::stop_worker(thread_id);
  }, nb::arg("thread_id"), "Stop VM worker thread_id at its next safe point; returns once it is parked.");
  m.def("_odb_restart_worker", &vm::restart_worker, nb::arg("thread_id"), "Restart a stopped VM worker.");
  m.def("_odb_stopped", []() {
    vm::StoppedSet s = vm::stopped_threads();
    std::vector<int> workers;
    for (int k = 0; k < vm::kMaxThreadIds; ++k)
      if (s.workers[k]) workers.push_back(k);
    return nb::make_tuple(s.scheduler, workers);
  }, "(scheduler stopped, [stopped worker ids]).");
  m.def("_odb_breakpoint", [](std::optional<Tensor> t) {
    rill_odb_breakpoint(t && t->defined() ? t->impl() : nullptr);
  }, nb::arg("tensor").none() = nb::none(), "Call rill_odb_breakpoint (a debugger stops there).");
  m.def("_odb_tensor_address", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); },
        nb::arg("tensor"), "Address of the tensor's rill::TensorImpl (for odb-tensor in gdb).");

  m.def("_vm_trace_start", &vm::trace::start, nb::arg("path"), "Start recording the VM trace into path.");
  m.def("_vm_trace_stop", []() {
    try {
      wait_all();  // the instructions issued inside the block finish, so each has its four events
    } catch (...) {
      vm::trace::stop();
      throw;
    }
    return vm::trace::stop();
  }, "Wait for the VM, stop recording and write the trace; returns the number of instructions written.");
  m.def("_vm_trace_active", &vm::trace::active, "True while a VM trace records.");
}

}  // namespace rill::py
