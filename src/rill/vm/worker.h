// A VM worker thread: runs the instructions dispatched to one thread id, in
// order, then hands each back to the scheduler to retire.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "rill/vm/instruction.h"

namespace rill::vm {

class Scheduler;

/** One VM thread ("rill-worker-N"). */
class Worker {
 public:
  Worker(int thread_id, Scheduler* scheduler);
  /** Queue an instruction whose dependences are met. */
  void push(Instruction* instruction);

 private:
  void loop();
  int thread_id_;
  Scheduler* scheduler_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Instruction*> queue_;
  std::atomic<bool> has_work_{false};
  bool sleeping_ = false;
  std::thread thread_;
};

}  // namespace rill::vm
