// A VM worker thread: runs the instructions dispatched to one thread id, in
// order, then hands each back to the scheduler to retire.
#pragma once

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

/** One VM thread ("rill-worker-N"). */
class Worker : private VmThread {
 public:
  /** Start the thread; it parks at gate whenever a stop is requested (Note [Parking] in park.h). */
  Worker(int thread_id, Scheduler* scheduler, ParkGate* gate);
  /** Queue an instruction whose dependences are met. */
  void push(Instruction* instruction);

 private:
  void loop();
  bool poll_later();
  void poll_until_work();
  void wait_for_conflicts(const Instruction& next);
  int thread_id_;
  Scheduler* scheduler_;
  ParkGate* gate_;
  // Worker-thread state, read by tools/odb/odb.py from a debugger.
  std::deque<Instruction*> batch_;   // taken from queue_: from batch_next_ on, not started yet
  size_t batch_next_ = 0;
  Instruction* running_ = nullptr;
  std::vector<Instruction*> later_;  // ran, their work still going on (Note [Kernels that finish later])
  std::deque<Instruction*> queue_;   // under mutex_
};

}  // namespace rill::vm
