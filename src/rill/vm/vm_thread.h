// What the VM's two kinds of thread share (the scheduler, scheduler.h; a worker, worker.h): the lock and
// condition variable producers wake it with, the online spin before it sleeps, the sleep itself, and its
// OS thread, which lives as long as the process.
//
// Note [Staying online]
// After its last piece of work a VM thread keeps polling (yielding the CPU) for
// RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS before it blocks, so the next op does not pay a futex wake and a
// context switch. The spin stops early when it does not pay: when a yield handed the core to another thread
// for a while (no core is free: spinning only delays that thread, maybe the very client that will submit
// the next op; Note [Spinning on a busy machine] in util/spin.h), or before it starts when the thread has
// lately waited for a core more than it ran (its run delay; Note [Waiting for a core] in util/spin.h: with
// the competing processes in other scheduling groups a yield returns at once however busy the cores are),
// and, for the scheduler, after a waiter had to run a batch itself (Note [A waiter runs the queue] in
// scheduler.cpp).
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "rill/util/spin.h"
#include "rill/vm/config.h"
#include "rill/vm/park.h"

namespace rill::vm {

class VmThread {
 protected:
  /** How an online spin ended. */
  enum class Spin : uint8_t { kWork, kTimeout, kNoFreeCore };

  VmThread() = default;
  ~VmThread() = default;

  /** Start the OS thread, named name, running body (which never returns) for the life of the process; gate
   * is its stop switch (Note [Parking] in park.h), whose stop request wakes its sleep. */
  template <typename Body>
  void start(std::string name, ParkGate& gate, Body body) {
    gate.attach(
        [](void* self) {
          auto* t = static_cast<VmThread*>(self);
          std::lock_guard<std::mutex> lock(t->mutex_);
          t->cv_.notify_one();
        },
        this);
    thread_ = std::thread([name = std::move(name), body] {
      pthread_setname_np(pthread_self(), name.c_str());
      body();
    });
    thread_.detach();  // the VM is never torn down
  }

  /** Producer side: append item to queue under the lock and flag the work; true when the thread sleeps and
   * would run it (its_turn(), read under the same lock: the caller then wakes it, or does the work itself). */
  template <typename Queue, typename Item, typename Turn>
  bool post(Queue& queue, Item item, Turn its_turn) {
    bool asleep;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue.push_back(item);
      asleep = sleeping_ && its_turn();
    }
    has_work_.store(true, std::memory_order_release);  // seen by the online spin
    return asleep;
  }
  template <typename Queue, typename Item>
  bool post(Queue& queue, Item item) {
    return post(queue, item, [] { return true; });
  }

  /** Wake the thread from its sleep, whether or not the work is still there when it runs: a waiter may have
   * taken it meanwhile (Note [A waiter runs the queue]), and a thread that went back to sleep would cost every
   * later submission this wake-up again; woken, it spins online and takes the next one. */
  void wake() {
    std::lock_guard<std::mutex> lock(mutex_);  // it sleeps on cv_ or is about to re-check its predicate
    woken_ = true;
    cv_.notify_one();
  }

  /** Note [Staying online]: yield until work is flagged, a stop is requested, or online_us have passed since
   * `since`; kNoFreeCore when a yield was slow or the thread lately waited for a core. */
  Spin spin_online(const ParkGate& gate, std::chrono::steady_clock::time_point since) {
    if (cores_contended()) return has_work_.load(std::memory_order_acquire) ? Spin::kWork : Spin::kNoFreeCore;
    return spin_until(gate, since + std::chrono::microseconds(config().online_us));
  }

  /** Yield until work is flagged, a stop is requested, or deadline, however busy the cores are; kNoFreeCore when a
   * yield was slow. */
  Spin spin_until(const ParkGate& gate, std::chrono::steady_clock::time_point deadline) {
    while (!has_work_.load(std::memory_order_acquire)) {
      if (gate.stop_requested() || std::chrono::steady_clock::now() >= deadline) return Spin::kTimeout;
      if (!spin_yield()) return Spin::kNoFreeCore;
    }
    return Spin::kWork;
  }

  /** Sleep (holding lock on mutex_) until ready(), a wake or a stop request, or for at most `most` when given (the
   * scheduler's deadlines: Note [Waiting for a core] and Note [The comm stream's hand-offs] in scheduler.cpp);
   * producers wake it (post, wake). False when `most` passed with none of these. */
  template <typename Ready>
  bool sleep(std::unique_lock<std::mutex>& lock, const ParkGate& gate, Ready ready,
             std::optional<std::chrono::nanoseconds> most = std::nullopt) {
    sleeping_ = true;
    woken_ = false;
    asleep_.store(true, std::memory_order_relaxed);  // a hint for waiters (Note [A waiter runs the queue])
    auto done = [&] { return ready() || woken_ || gate.stop_requested(); };
    bool woke = true;
    if (most) woke = cv_.wait_for(lock, *most, done);
    else cv_.wait(lock, done);
    asleep_.store(false, std::memory_order_relaxed);
    sleeping_ = false;
    return woke;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> has_work_{false};
  bool sleeping_ = false;  // under mutex_
  bool woken_ = false;     // under mutex_: wake() was called since the thread went to sleep
  std::atomic<bool> asleep_{false};  // sleeping_, for waiters deciding to take the thread's work (a hint: no lock)
  std::thread thread_;
};

}  // namespace rill::vm
