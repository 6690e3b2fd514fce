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
#include "rill/vm/vm_thread.h"
#include "rill/vm/worker.h"

namespace rill::vm {

inline constexpr int kMaxThreads = kMaxThreadIds;
/** How long a waiter leaves queued work to a scheduler or worker thread that is not asleep: one on a core takes
 * it within a microsecond, and each microsecond more is paid at every sync point; one that shares a core with
 * the waiter would take it only when the waiter yields (Note [A waiter runs the queue]). */
inline constexpr int64_t kHelpGraceNs = 1'000;
/** How long a slow yield of the scheduler's spin counts as "no core is free" (Note [A waiter runs the queue]). */
inline constexpr int64_t kNoFreeCoreNs = 20'000'000;
/** How long the scheduler, waiting for a core, leaves queued work to the clients (Note [Waiting for a core]). */
inline constexpr int64_t kLeaveToClientsNs = 100'000'000;
/** How long the scheduler sleeps at most once the comm stream is in use, whose completions need not wake it
 * (Note [The comm stream's hand-offs]). */
inline constexpr int64_t kCommRetireNs = 1'000'000;

/** The one scheduler of the process. */
class Scheduler : private VmThread {
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
  /** A worker finished an instruction (worker threads); more_queued: more of its thread's instructions are queued
   * behind it (a hint, Note [The comm stream's hand-offs]). */
  void complete(Instruction* instruction, bool more_queued = false);
  /** A client starts polling at a sync point (it then retires what the comm stream finishes: Note [The comm
   * stream's hand-offs]). */
  void start_polling() { polling_waiters_.fetch_add(1, std::memory_order_seq_cst); }
  /** It stops polling: its wait ended, or (to_block) it is about to block on its marker until the VM wakes it.
   * It retires what was left to it meanwhile. */
  void stop_polling(bool to_block = false);
  /** A client that blocked (stop_polling(true)) wakes. */
  void unblocked() { blocked_waiters_.fetch_sub(1, std::memory_order_seq_cst); }
  /** Instructions submitted and not yet retired. */
  int64_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  /** Block until fewer than limit instructions are in flight; false if the scheduler is stopped meanwhile. */
  bool wait_in_flight_below(int64_t limit);
  /** The scheduler thread's stop switch (rill.odb; Note [Parking] in park.h). */
  ParkGate& scheduler_gate() { return gate_; }
  /** Worker thread_id's stop switch (it exists before the worker does). */
  ParkGate& worker_gate(int thread_id) { return worker_gates_[thread_id]; }
  /** A client waiting at a sync point since waiting_since_ns runs the queued batch on its own thread when the
   * scheduler thread is not running it (Note [A waiter runs the queue]); true if it took any. */
  bool help(int64_t waiting_since_ns);
  /** A client waiting since waiting_since_ns runs what is queued for worker thread_id on its own thread when that
   * worker is not running it and the worker is not pinned (Note [A waiter runs the queue]); true if it ran any. */
  bool help_worker(int thread_id, int64_t waiting_since_ns);
  /** Batches run by client threads instead of the scheduler thread (for tests and benchmarks). */
  uint64_t waiter_batches() const { return waiter_batches_.load(std::memory_order_relaxed); }
  /** Batches of a worker's queue run by client threads instead of the worker (for tests and benchmarks). */
  uint64_t waiter_worker_batches() const { return waiter_worker_batches_.load(std::memory_order_relaxed); }
  /** Times the scheduler left the queued work to the clients (Note [Waiting for a core] in scheduler.cpp). */
  uint64_t deferrals() const { return deferrals_.load(std::memory_order_relaxed); }
  /** Comm-stream completions handed back without waking the scheduler (Note [The comm stream's hand-offs]). */
  uint64_t comm_completions_left() const { return comm_completions_left_.load(std::memory_order_relaxed); }

 private:
  void loop();
  bool leave_to_clients(bool deferred);
  bool run_batch();
  void admit(Instruction* instruction);
  void place_marker(Instruction* instruction);
  bool on_a_worker(int thread_id) const;
  void pump(int thread_id);
  void dispatch(Instruction* instruction);
  void run_inline(Instruction* instruction);
  void retire(Instruction* instruction);
  Worker* worker(int thread_id);

  // Shared with producers, under mutex_: inbox (clients) and completions (workers).
  std::vector<Instruction*> inbox_;
  std::vector<Instruction*> completions_;
  std::atomic<int64_t> no_free_core_until_{0};  // now_ns() before which the scheduler found no core free
  std::atomic<bool> spin_missed_{false};
  std::atomic<uint64_t> waiter_batches_{0};  // a waiter ran a batch while the scheduler was online (Note [A waiter runs the queue])
  std::atomic<uint64_t> waiter_worker_batches_{0};  // a waiter ran a worker's queue (the same Note)
  std::atomic<uint64_t> deferrals_{0};  // Note [Waiting for a core]
  // Note [The comm stream's hand-offs]
  std::atomic<int> polling_waiters_{0};  // clients polling at a sync point
  std::atomic<int> blocked_waiters_{0};  // clients blocked at a sync point until the VM wakes them
  std::atomic<bool> comm_stream_used_{false};  // an instruction of the comm stream was dispatched
  std::atomic<uint64_t> comm_completions_left_{0};
  bool sleep_has_deadline_ = false;  // under mutex_: the scheduler sleeps for at most kCommRetireNs
  // Held by whoever runs the scheduler's loop body (run_batch): the scheduler thread, or a waiter helping. All
  // the scheduler-thread state below, and the instructions' bookkeeping, is touched only under it.
  std::mutex drive_mutex_;
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
  std::atomic<Worker*> published_[kMaxThreads] = {};  // workers_, for waiters (help_worker), which hold no drive_mutex_
};

}  // namespace rill::vm
