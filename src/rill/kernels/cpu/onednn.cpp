#include "rill/kernels/cpu/onednn.h"

#include <omp.h>

#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill::cpu::onednn {

// Note [oneDNN threads]
// Debian builds libdnnl 2.6.3 with the OpenMP CPU runtime (DNNL_CPU_RUNTIME ==
// DNNL_RUNTIME_OMP in dnnl_config.h; libdnnl.so needs libgomp.so.1). GNU
// OpenMP's thread pool does not survive fork(): a child forked after the parent
// ran a parallel region inherits a team whose threads do not exist there, and
// its next parallel region can wait for them forever (DataLoader workers are
// such children). So rill never lets oneDNN start OpenMP threads: every thread
// that runs a primitive first sets its OpenMP thread count to 1
// (omp_set_num_threads is per thread in libgomp; oneDNN then runs primitives
// inline and never enters GOMP_parallel, so libgomp creates no threads at all).
// Parallelism comes from rill's own intra-op pool, which a forked child rebuilds
// (Note [Pool and fork] in util/parallel.cpp), exactly as for BLAS (Note [BLAS
// threads] in matmul.cpp): the work is cut into one piece per thread (batch
// samples for a convolution, planes for a pooling) and each piece is one
// single-threaded primitive execution (the convolution's backward-weight pass
// sums the pieces' partial gradients). tests/python/test_conv_pool.py forks
// during and after convolutions and computes one in the child: with oneDNN left
// at its default (2 OpenMP threads here) every child hung, including one forked
// when no convolution was running; with one OpenMP thread per caller all pass.
//
// Note [oneDNN and fork]
// Creating a primitive takes oneDNN's own locks (its primitive cache, JIT code
// generation). A child forked by another thread while a VM thread was creating
// one inherited those locks held and hung at its first convolution
// (tests/python/test_fork.py, conv case, about one run in ten). So primitives are
// created under creation_mutex(), which is held across fork() (util/fork.h): the
// fork waits for a creation in progress (milliseconds; creation never waits on
// another thread), and the child never sees oneDNN mid-creation. Running a
// primitive takes no global lock.

dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // leaked: used until exit
  return *e;
}

ThreadState::ThreadState() : stream(engine()) { omp_set_num_threads(1); }

void* ThreadState::buffer(int i, size_t bytes, const char* op) {
  Buffer& b = buffers_[i];
  if (bytes > b.bytes) {
    b.data.reset(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    b.bytes = b.data ? bytes : 0;
    RILL_CHECK(b.data != nullptr, Runtime, "[", op, "] out of memory allocating a ", bytes,
               "-byte oneDNN buffer; use smaller tensors");
  }
  return b.data.get();
}

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

std::mutex& creation_mutex() {
  static std::mutex* mu = [] {
    auto* m = new std::mutex();  // leaked, like the caches it guards
    fork::guard_mutex(m);
    return m;
  }();
  return *mu;
}

}  // namespace rill::cpu::onednn
