// rill.distributed's bindings (python/rill/distributed/): the process group and its operations on the comm
// stream (Note [The comm stream] in src/rill/comm/collectives.cpp). The operations return at once; the few
// that block in PyTorch too (init, new_group, barrier, recv) wait here with the GIL released.
#include "bind.h"  // Python.h first

#include "rill/comm/collectives.h"

namespace rill::py {

void init_distributed(nb::module_& m) {
  using comm::ReduceOp;
  auto op_of = [](int64_t op) {
    RILL_CHECK(op >= 0 && op <= static_cast<int64_t>(ReduceOp::kBxor), Value, "[rill.distributed] unknown ReduceOp ",
               op);
    return static_cast<ReduceOp>(op);
  };
  m.def("_dist_init", [] {
    wait_readable(comm::init());
    return std::make_pair(comm::world_rank(), comm::world_size());
  });
  m.def("_dist_initialized", &comm::initialized);
  m.def("_dist_register_kernels", &comm::register_kernels,
        "Register the comm ops' kernels without starting MPI: a graph compiled for a simulated world names them.");
  m.def("_dist_finalize", [] { wait_readable(comm::finalize()); });
  m.def("_dist_abort", [](int code) { comm::abort_job(code); });
  m.def("_dist_new_group", [](int64_t group, const std::vector<int64_t>& ranks) {
    wait_readable(comm::new_group(group, ranks));
  });
  m.def("_dist_destroy_group", [](int64_t group) { wait_readable(comm::destroy_group(group)); });
  m.def("_dist_all_reduce", [op_of](const Tensor& t, int64_t op, int64_t group) {
    comm::all_reduce(t, op_of(op), group);
  });
  m.def("_dist_broadcast", &comm::broadcast);
  m.def("_dist_reduce", [op_of](const Tensor& t, int64_t op, int64_t dst, int64_t group) {
    comm::reduce(t, op_of(op), dst, group);
  });
  m.def("_dist_all_gather", &comm::all_gather);
  m.def("_dist_reduce_scatter", [op_of](const Tensor& out, const Tensor& in, int64_t op, int64_t world,
                                        int64_t group) { comm::reduce_scatter(out, in, op_of(op), world, group); });
  m.def("_dist_send", &comm::send);
  m.def("_dist_recv", &comm::recv);
  m.def("_dist_barrier", &comm::barrier);
  m.def("_dist_is_done", [](const std::vector<Tensor>& tensors) {
    for (const Tensor& t : tensors)
      if (t.storage()->writes_in_flight().load(std::memory_order_acquire) != 0) return false;
    return true;
  }, "True when no queued op still writes any of tensors.");
  m.def("_dist_wait", [](const std::vector<Tensor>& tensors) {
    for (const Tensor& t : tensors) wait_readable(t);
  }, "Wait (GIL released) until tensors can be read; raises the error of a failed operation.");
}

}  // namespace rill::py
