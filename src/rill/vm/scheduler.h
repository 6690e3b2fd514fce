// The scheduler thread ("rill-scheduler"): drains submitted instructions, links
// their dependences, dispatches those that are ready (running thread 0's inline
// unless RILL_VM_COMPUTE_ON_WORKER_THREAD=1, and sync markers, unless all they
// follow runs on one worker: Note [Markers on a worker]), and
// retires finished ones, which may make others ready.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/vm/config.h"
#include "rill/vm/instruction.h"
#include "rill/vm/park.h"
#include "rill/vm/worker.h"

namespace rill::vm {

inline constexpr int kMaxThreads = kMaxThreadIds;

/** The one scheduler of the process. */
class Scheduler {
 public:
  /** The process's scheduler, started on first use (again in a forked child). */
  static Scheduler& get();
  /** True once get() started one in this process. */
  static bool started();
  /** Forget the scheduler in a forked child: its threads do not exist there (Note [Fork]). */
  static void forget_after_fork();

  Scheduler();
  /** Hand over an instruction (any client thread). */
  void submit(Instruction* instruction);
  /** A worker finished an instruction (worker threads). */
  void complete(Instruction* instruction);
  /** Instructions submitted and not yet retired. */
  int64_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  /** Block until fewer than limit instructions are in flight; false if the scheduler is stopped meanwhile. */
  bool wait_in_flight_below(int64_t limit);
  /** The scheduler thread's stop switch (rill.odb; Note [Parking] in park.h). */
  ParkGate& scheduler_gate() { return gate_; }
  /** Worker thread_id's stop switch (it exists before the worker does). */
  ParkGate& worker_gate(int thread_id) { return worker_gates_[thread_id]; }

 private:
  void loop();
  void enqueue(std::vector<Instruction*>& queue, Instruction* instruction);
  void admit(Instruction* instruction);
  void place_marker(Instruction* instruction);
  bool on_a_worker(int thread_id) const;
  void pump(int thread_id);
  void dispatch(Instruction* instruction);
  void run_inline(Instruction* instruction);
  void retire(Instruction* instruction);
  Worker* worker(int thread_id);

  // Shared with producers: inbox (clients) and completions (workers).
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Instruction*> inbox_;
  std::vector<Instruction*> completions_;
  std::atomic<bool> has_work_{false};
  bool sleeping_ = false;
  std::atomic<int64_t> in_flight_{0};
  std::mutex drained_mutex_;
  std::condition_variable drained_cv_;  // back-pressure waiters
  std::atomic<int> drained_waiters_{0};

  ParkGate gate_;
  ParkGate worker_gates_[kMaxThreads];

  // Scheduler-thread state. tools/odb/odb.py reads it from a debugger.
  std::vector<Instruction*> taken_inbox_;        // the inbox being admitted: from next_admit_ on, not yet
  std::vector<Instruction*> taken_completions_;  // the completions being retired: from next_retire_ on, not yet
  size_t next_admit_ = 0;
  size_t next_retire_ = 0;
  Instruction* running_ = nullptr;               // the instruction running inline, if any
  std::deque<Instruction*> fifo_[kMaxThreads];   // admitted, not yet dispatched, per thread id
  Instruction* last_[kMaxThreads] = {};          // newest unretired kernel instruction per thread id
  std::unique_ptr<Worker> workers_[kMaxThreads];
  std::thread thread_;
};

}  // namespace rill::vm
