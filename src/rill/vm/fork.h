// The VM's side of fork() (docs/architecture.md §3.8; Note [Fork] in fork.cpp).
#pragma once

#include "rill/core/storage.h"
#include "rill/util/fork.h"

namespace rill::vm {

/** Remember that the calling thread submitted work: a fork() from it drains the VM first. */
void mark_thread_submitted();

/** Claim a storage the VM last saw before a fork; raises if its value was lost (still being written). */
void adopt_after_fork(Storage& storage);

/** Make storage usable by this process's VM: a no-op unless a fork happened since it was last used. */
inline void check_fork_epoch(Storage& storage) {
  if (storage.vm_epoch().load(std::memory_order_relaxed) != fork::epoch()) adopt_after_fork(storage);
}

}  // namespace rill::vm
