// Stopping and restarting VM threads from outside (rill.odb, docs/architecture.md §7).
//
// Note [Parking]
// A VM thread (the scheduler, a worker) checks its ParkGate once per turn of its
// loop, at the top, where it holds no lock and is between instructions: a relaxed
// load and a branch. stop() sets the flag and wakes the thread if it sleeps (its
// sleep predicate includes the flag); the thread then parks on the gate's condition
// variable until restart(). Meanwhile the rest of the VM keeps going: clients keep
// submitting into a stopped scheduler's inbox, the scheduler keeps dispatching to a
// stopped worker's queue, so instructions queue up behind the stopped thread and
// odb can show them; restart() drains them.
//
// Waiting on work queued behind a stopped thread:
//   - the scheduler finishes every sync marker, so a sync point (item(), numpy(),
//     synchronize()) that has to wait while the scheduler is stopped can never end:
//     it raises RuntimeError (after its first 50 ms) instead of hanging; so does a
//     submission that back-pressure would block (RILL_VM_MAX_IN_FLIGHT queued);
//   - a sync point waiting on a stopped worker waits (Ctrl-C interrupts it) and warns
//     once after a second, naming the worker to restart.
// Fork (Note [Fork] in fork.cpp): a fork that must drain the VM restarts the stopped
// threads for the drain and stops them again in the parent; the child's fresh VM runs.
// Exit (rill._C._shutdown) restarts every stopped thread, so queued work finishes.
#pragma once

#include <atomic>
#include <bitset>
#include <condition_variable>
#include <mutex>

#include "rill/vm/config.h"

namespace rill::vm {

/** A stop/restart switch for one VM thread (Note [Parking]). */
class ParkGate {
 public:
  /** True while a stop is requested; the VM thread's loop checks it once a turn. */
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }
  /** VM thread: stay here while a stop is requested. Call only where the thread holds no lock. */
  void park();
  /** VM thread, once at its start: how to wake it from its own sleep (wake takes only the thread's lock). */
  void attach(void (*wake)(void* ctx), void* ctx);
  /** Ask the thread to park at its next safe point; with wait, return once it has (if it runs yet). */
  void stop(bool wait);
  /** Let a stopped thread go on. */
  void restart();
  /** True when parked right now (for tests and odb). */
  bool parked() const;

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool parked_ = false;
  void (*wake_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
};

/** Stop the scheduler (starting the VM if needed) and wait until it parks. Call without the GIL. */
void stop_scheduler();
/** Restart the scheduler. */
void restart_scheduler();
/** Stop worker thread_id and wait until it parks (at once if it has not started: it parks before its first
 * instruction). Raises for an id out of range, or 0 while thread 0 computes on the scheduler. */
void stop_worker(int thread_id);
/** Restart worker thread_id. */
void restart_worker(int thread_id);

/** Which VM threads are stopped. */
struct StoppedSet {
  bool scheduler = false;
  std::bitset<kMaxThreadIds> workers;
  /** True when none is. */
  bool empty() const { return !scheduler && workers.none(); }
};
/** Restart every stopped VM thread (exit, a fork's drain); returns which were stopped. */
StoppedSet restart_all();
/** Stop again (without waiting) the threads restart_all() restarted. */
void stop_again(StoppedSet stopped);
/** Which VM threads are stopped now. */
StoppedSet stopped_threads();

/** True when the scheduler is stopped (a stop was requested and not yet restarted). */
bool scheduler_stopped();
/** Raise when the scheduler is stopped: a sync point waiting on the VM could never finish (Note [Parking]).
 * Called by waits that time out, and by back-pressure. */
void check_not_stalled();

}  // namespace rill::vm
