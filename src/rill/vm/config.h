// The VM's knobs (docs/architecture.md §3.10), re-read whenever an override changes.
#pragma once

#include <cstdint>

namespace rill::vm {

/** Most VM thread ids any setting allows (thread 0 plus user threads). */
inline constexpr int kMaxThreadIds = 64;

/** Current values of the RILL_VM_* knobs. */
struct Config {
  bool multi_thread = true;           // RILL_VM_MULTI_THREAD
  bool compute_on_worker = false;     // RILL_VM_COMPUTE_ON_WORKER_THREAD (thread 0 only)
  int64_t online_us = 200;            // RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS
  int64_t max_in_flight = 16384;      // RILL_VM_MAX_IN_FLIGHT (back-pressure bound)
  int worker_thread_limit = 16;       // RILL_VM_WORKER_THREAD_LIMIT (VM thread ids, thread 0 included)
  int waiter_runs_queued = 1;         // RILL_VM_WAITER_RUNS_QUEUED: 0 never, 1 when the scheduler is not at it, 2 always
                                      // (Note [A waiter runs the queue] in scheduler.cpp)
};

/** The knobs as they are now (cheap: re-reads the environment only after an override). */
const Config& config();

}  // namespace rill::vm
