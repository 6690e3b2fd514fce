#include "rill/vm/park.h"

#include "rill/util/error.h"
#include "rill/vm/scheduler.h"

namespace rill::vm {

// Note [Parking]: stop_ is written under mutex_, so a thread parking (which reads it under
// mutex_) and a stopper waiting for parked_ agree; the loop's check outside the lock is
// relaxed because a late sighting only delays the park by one turn, and a sleeping thread
// is woken through its own lock (wake_), which orders the store before its re-check.

void ParkGate::park() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!stop_.load(std::memory_order_relaxed)) return;
  parked_ = true;
  cv_.notify_all();  // stop(wait) returns
  cv_.wait(lock, [&] { return !stop_.load(std::memory_order_relaxed); });
  parked_ = false;
}

void ParkGate::attach(void (*wake)(void*), void* ctx) {
  std::lock_guard<std::mutex> lock(mutex_);
  wake_ = wake;
  wake_ctx_ = ctx;
}

void ParkGate::stop(bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  stop_.store(true, std::memory_order_relaxed);
  if (!wake_) return;  // not started: its loop checks the gate before its first instruction
  wake_(wake_ctx_);    // takes only the thread's own lock, which it never holds while taking ours
  if (wait) cv_.wait(lock, [&] { return parked_ || !stop_.load(std::memory_order_relaxed); });
}

void ParkGate::restart() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(false, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

bool ParkGate::parked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return parked_;
}

namespace {

void check_worker_id(int thread_id, const char* api) {
  RILL_CHECK(thread_id >= 0 && thread_id < kMaxThreadIds, Value, "[", api, "] VM thread id ", thread_id,
             " is out of range: ids go from 0 to ", kMaxThreadIds - 1);
}

}  // namespace

void stop_scheduler() { Scheduler::get().scheduler_gate().stop(true); }

void restart_scheduler() {
  if (Scheduler::started()) Scheduler::get().scheduler_gate().restart();
}

void stop_worker(int thread_id) {
  check_worker_id(thread_id, "odb.stop_vm_worker");
  RILL_CHECK(thread_id != 0 || config().compute_on_worker, Value,
             "[odb.stop_vm_worker] thread 0's instructions run inline on the scheduler "
             "(RILL_VM_COMPUTE_ON_WORKER_THREAD=0), so worker 0 has nothing to stop: use "
             "rill.odb.stop_vm_scheduler(), or set RILL_VM_COMPUTE_ON_WORKER_THREAD=1");
  Scheduler::get().worker_gate(thread_id).stop(true);
}

void restart_worker(int thread_id) {
  check_worker_id(thread_id, "odb.restart_vm_worker");
  if (Scheduler::started()) Scheduler::get().worker_gate(thread_id).restart();
}

StoppedSet stopped_threads() {
  StoppedSet set;
  if (!Scheduler::started()) return set;
  Scheduler& s = Scheduler::get();
  set.scheduler = s.scheduler_gate().stop_requested();
  for (int k = 0; k < kMaxThreadIds; ++k) set.workers[k] = s.worker_gate(k).stop_requested();
  return set;
}

StoppedSet restart_all() {
  StoppedSet set = stopped_threads();
  if (set.empty()) return set;
  Scheduler& s = Scheduler::get();
  if (set.scheduler) s.scheduler_gate().restart();
  for (int k = 0; k < kMaxThreadIds; ++k)
    if (set.workers[k]) s.worker_gate(k).restart();
  return set;
}

void stop_again(StoppedSet set) {
  if (set.empty() || !Scheduler::started()) return;
  Scheduler& s = Scheduler::get();
  if (set.scheduler) s.scheduler_gate().stop(false);
  for (int k = 0; k < kMaxThreadIds; ++k)
    if (set.workers[k]) s.worker_gate(k).stop(false);
}

bool scheduler_stopped() { return Scheduler::started() && Scheduler::get().scheduler_gate().stop_requested(); }

void check_not_stalled() {
  if (!scheduler_stopped()) return;
  RILL_FAIL(Runtime, "[odb] this wait can never end: the VM scheduler is stopped (rill.odb.stop_vm_scheduler()) "
            "and the work it waits for is queued behind it; call rill.odb.restart_vm_scheduler() first");
}

}  // namespace rill::vm
