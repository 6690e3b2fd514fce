#include "rill/vm/config.h"

#include <algorithm>

#include "rill/util/env.h"

namespace rill::vm {

const Config& config() {
  // Per thread: readers never race with a reload on another thread.
  thread_local Config cached;
  thread_local uint64_t generation = ~uint64_t{0};
  uint64_t g = env::generation();
  if (g != generation) {
    Config c;
    c.multi_thread = env::get_bool("RILL_VM_MULTI_THREAD", true);
    c.compute_on_worker = env::get_bool("RILL_VM_COMPUTE_ON_WORKER_THREAD", false);
    c.online_us = std::max<int64_t>(0, env::get_int("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", 200));
    c.max_in_flight = std::max<int64_t>(16, env::get_int("RILL_VM_MAX_IN_FLIGHT", 16384));
    c.worker_thread_limit = static_cast<int>(
        std::clamp<int64_t>(env::get_int("RILL_VM_WORKER_THREAD_LIMIT", 16), 1, kMaxThreadIds));
    c.waiter_runs_queued = static_cast<int>(std::clamp<int64_t>(env::get_int("RILL_VM_WAITER_RUNS_QUEUED", 1), 0, 2));
    cached = c;
    generation = g;
  }
  return cached;
}

}  // namespace rill::vm
