#include "rill/vm/fork.h"

#include <thread>

#include "rill/vm/park.h"
#include "rill/vm/scheduler.h"
#include "rill/vm/virtual_machine.h"

namespace rill::vm {

// Note [Fork]
// fork() copies one thread; the VM's scheduler and workers are not in the child.
//   - Prepare (util/fork.h, kDrain stage): if the forking thread itself has
//     submitted instructions (t_submitted), the VM is drained first, so the child
//     inherits finished values. A thread that never used rill (a library's
//     internal thread) does not wait: it could otherwise deadlock, e.g. when the
//     thread that must finish the work waits on a lock the forker holds.
//     Short-held mutexes (allocator, symbol tables, knobs, VM bookkeeping) are
//     taken in the kLock stage, so none is inherited locked.
//     The drain passes through no odb anchor (drain_unanchored), so a debugger's
//     breakpoint on an anchor never stops the forking thread inside fork()
//     (Note [odb anchors] in trace.h). VM threads stopped through rill.odb are
//     restarted for the drain (else it would never end) and stopped again in the
//     parent once fork() returns (Note [Parking] in park.h).
//   - Child: the scheduler is forgotten (leaked, its threads cannot be joined);
//     the first op starts a fresh one. Instructions queued in the parent are never
//     run in the child; the forking thread's SyncRead markers still queued there
//     (a read completed by a worker but not yet retired, Note [Markers on a
//     worker]) are free again.
//   - A storage records the fork epoch in which the VM last saw it. The first use
//     in a later epoch clears the access list (its instructions belong to the
//     parent's VM) — unless a write was still in flight at the fork: that value
//     never existed in the child, so using the tensor raises instead of reading
//     garbage.

namespace {

thread_local bool t_submitted = false;
thread_local StoppedSet t_restarted_for_fork;  // prepare and parent run on the forking thread
constexpr uint32_t kAdopting = ~uint32_t{0};

void drain_before_fork(void*) {
  t_restarted_for_fork = {};
  if (t_submitted && Scheduler::started() && num_in_flight() > 0) {
    t_restarted_for_fork = restart_all();
    drain_unanchored();
  }
}

void stop_again_in_parent(void*) {
  stop_again(t_restarted_for_fork);
  t_restarted_for_fork = {};
}

void forget_vm_in_child(void*) {
  Scheduler::forget_after_fork();
  forget_reads_after_fork();
  t_submitted = false;
}

}  // namespace

void mark_thread_submitted() {
  static const bool registered = [] {
    fork::on_fork(fork::Stage::kDrain, {drain_before_fork, stop_again_in_parent, forget_vm_in_child});
    return true;
  }();
  (void)registered;
  t_submitted = true;
}

void adopt_after_fork(Storage& s) {
  const uint32_t now = fork::epoch();
  uint32_t seen = s.vm_epoch().load(std::memory_order_acquire);
  while (seen != now) {
    if (seen == kAdopting) {  // another thread of the child is claiming it
      std::this_thread::yield();
      seen = s.vm_epoch().load(std::memory_order_acquire);
      continue;
    }
    if (!s.vm_epoch().compare_exchange_weak(seen, kAdopting, std::memory_order_acq_rel)) continue;
    if (s.writes_in_flight().load(std::memory_order_relaxed) != 0) {
      s.vm_epoch().store(seen, std::memory_order_release);  // stays unusable
      RILL_FAIL(Runtime, "[fork] this tensor was still being computed when the process forked from a thread "
                "that had not used rill (so the VM was not synchronised first): its value does not exist in this "
                "child process. Call rill.synchronize() before forking, or compute the tensor again in the child");
    }
    s.accesses().last_write = nullptr;  // the parent's instructions: never run here
    s.accesses().reads.clear();
    s.vm_epoch().store(now, std::memory_order_release);
    return;
  }
}

}  // namespace rill::vm
