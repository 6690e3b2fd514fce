// A VM worker thread: runs the instructions dispatched to one thread id, in
// order, then hands each back to the scheduler to retire. A client waiting at a
// sync point may run them in its place (Note [A waiter runs the queue] in scheduler.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/vm/instruction.h"
#include "rill/vm/park.h"
#include "rill/vm/vm_thread.h"

namespace rill::vm {

class Scheduler;

/** How long the comm thread yields for the next collective before it sleeps, however busy the cores are (Note [The
 * comm stream's hand-offs] in scheduler.cpp). */
inline constexpr auto kCommIdleSpin = std::chrono::microseconds(50);

/** One VM thread ("rill-worker-N"). */
class Worker : private VmThread {
 public:
  /** Start the thread; it parks at gate whenever a stop is requested (Note [Parking] in park.h). */
  Worker(int thread_id, Scheduler* scheduler, ParkGate* gate);
  /** Queue an instruction whose dependences are met. */
  void push(Instruction* instruction);
  /** A client waiting at a sync point since waiting_since_ns runs the queue on its own thread when the worker
   * thread is not at it and the thread id is not pinned (Note [A waiter runs the queue]); true if it ran any. */
  bool help(int64_t waiting_since_ns);

 private:
  void loop();
  bool take_batch();
  void run_batch();
  void park_claimed();
  bool poll_later();
  void poll_until_work();
  void wait_for_conflicts(const Instruction& next);
  int thread_id_;
  Scheduler* scheduler_;
  ParkGate* gate_;
  // Run state, touched only by the thread holding the claim (claimed_): the worker thread, or a waiter running
  // the queue in its place. Read by tools/odb/odb.py from a debugger.
  std::deque<Instruction*> batch_;   // taken from queue_: from batch_next_ on, not started yet
  size_t batch_next_ = 0;
  Instruction* running_ = nullptr;
  std::vector<Instruction*> later_;  // ran, their work still going on (Note [Kernels that finish later])
  std::deque<Instruction*> queue_;   // under mutex_
  bool claimed_ = false;             // under mutex_: a thread is running this thread id's instructions
  bool held_ = false;                // written by the worker thread under mutex_: the claim is its own
  std::atomic<bool> pinned_{false};  // a pinned stream's instruction was queued here: no waiter runs the queue
};

}  // namespace rill::vm
