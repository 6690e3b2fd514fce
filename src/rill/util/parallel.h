// Intra-op parallelism for CPU kernels: a small pool whose caller takes part in
// the work. Nested calls and calls made while the pool is busy run inline.
// The pool survives fork(): the child gets a fresh one (Note [Pool and fork]).
#pragma once

#include <cstdint>
#include <type_traits>

namespace rill::parallel {

/** Threads a kernel may use (the caller included); RILL_NUM_THREADS or set_num_threads. */
int num_threads();

/** Set the intra-op thread count (>= 1). */
void set_num_threads(int n);

/** True while some thread runs a parallel region on the pool: every core is taken, so a thread
 * that only waits should sleep rather than poll (Note [Waiting beside a parallel region]). */
bool busy();

/** Run unclaimed chunks of the parallel region in flight, if any: a thread that only waits lends its core.
 * True if it ran any. */
bool help();

/** Type-erased body: fn(ctx, begin, end). */
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

/** Run fn over [begin, end) split in chunks of at least grain; blocks until done. */
void parallel_for_raw(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx);

/** Run f(begin, end) over [begin, end) split in chunks of at least grain elements. */
template <typename F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (end - begin <= grain || num_threads() == 1) {
    if (end > begin) f(begin, end);
    return;
  }
  parallel_for_raw(
      begin, end, grain,
      [](void* ctx, int64_t b, int64_t e) { (*static_cast<const F*>(ctx))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace rill::parallel
