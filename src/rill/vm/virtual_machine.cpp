#include "rill/vm/virtual_machine.h"

#include <atomic>
#include <bitset>
#include <mutex>
#include <thread>

#include "rill/util/parallel.h"
#include "rill/util/spin.h"
#include "rill/vm/config.h"
#include "rill/vm/fork.h"
#include "rill/vm/park.h"
#include "rill/vm/scheduler.h"
#include "rill/vm/trace.h"

namespace rill::vm {
namespace {

std::atomic<uint64_t> g_submitted{0};
std::atomic<UnlockedRunner> g_unlocked_runner{nullptr};
std::mutex g_error_mutex;
std::shared_ptr<const Error> g_unreported_error;
std::mutex g_ids_mutex;
std::bitset<kMaxThreadIds> g_ids_taken{1};  // id 0 is the default thread's

// Held across fork() and fresh in the child (util/fork.h).
[[maybe_unused]] const bool g_mutexes_guarded = [] {
  fork::guard_mutex(&g_error_mutex);
  fork::guard_mutex(&g_ids_mutex);
  return true;
}();

thread_local int t_thread_id = 0;
thread_local ReadTimes* t_read_times = nullptr;

Scheduler& scheduler() { return Scheduler::get(); }

void run_unlocked(void (*fn)(void*), void* ctx) {
  UnlockedRunner r = g_unlocked_runner.load(std::memory_order_acquire);
  if (r) {
    r(fn, ctx);
  } else {
    fn(ctx);
  }
}

[[noreturn]] void raise(const Error& e) { throw Error(e.kind(), e.what()); }

// Raise a tensor's poison; raised here, synchronize() need not report it again.
[[noreturn]] void raise_poison(const std::shared_ptr<const Error>& error) {
  {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    if (g_unreported_error == error) g_unreported_error.reset();
  }
  raise(*error);
}

// Synchronous mode: finish what is in flight, then run on this thread.
void run_here(Instruction& instr) {
  if (Scheduler::started() && scheduler().in_flight() > 0) synchronize();
  for (const Tensor& t : instr.inputs)
    if (t.storage()->poison()) raise_poison(t.storage()->poison());
  if (instr.is_sync()) {
    instr.run();
    instr.signal->notify_done();
    instr.signal->notify_retired();
    return;
  }
  instr.run_or_throw();
  if (instr.pending_work) {  // Note [Kernels that finish later] in worker.cpp
    while (!instr.pending_work->poll()) spin_yield();
    instr.pending_work.reset();
  }
}

// Everything submit does before the instruction reaches the scheduler.
bool admit_here(Instruction& instr) {
  g_submitted.fetch_add(1, std::memory_order_relaxed);
  mark_thread_submitted();
  for (const Tensor& t : instr.inputs) check_fork_epoch(*t.storage());
  for (const Tensor& t : instr.outputs) check_fork_epoch(*t.storage());
  const Config& c = config();
  if (!c.multi_thread) {
    run_here(instr);
    return false;
  }
  // Counted down when the scheduler retires the instruction (Scheduler::retire).
  for (const Tensor& t : instr.outputs) t.storage()->writes_in_flight().fetch_add(1, std::memory_order_relaxed);
  Scheduler& s = scheduler();
  if (s.in_flight() >= c.max_in_flight) {
    // Back-pressure: let the VM catch up (to half the bound) before queueing more.
    struct Wait {
      int64_t target;
      bool below;
    } wait{c.max_in_flight / 2, true};
    run_unlocked([](void* ctx) {
      auto* w = static_cast<Wait*>(ctx);
      w->below = scheduler().wait_in_flight_below(w->target);
    }, &wait);
    if (!wait.below && scheduler_stopped()) {  // Note [Parking] in park.h: raise rather than hang
      for (const Tensor& t : instr.outputs) t.storage()->writes_in_flight().fetch_sub(1, std::memory_order_relaxed);
      check_not_stalled();
    }
  }
  return true;
}

// A sync marker on tensors (all: after every earlier instruction too).
std::unique_ptr<Instruction> make_sync(const std::vector<Tensor>& tensors, bool all) {
  auto instr = new_instruction();
  instr->kind = Instruction::Kind::kSync;
  instr->inputs.assign(tensors.begin(), tensors.end());
  instr->sync_all = all;
  instr->signal = std::make_shared<SyncSignal>();
  return instr;
}

// Hand over an instruction admit_here accepted, recording it when a trace runs.
void hand_over(Instruction* instr) {
  if (trace::recording()) [[unlikely]]
    trace::record_submit(*instr);  // before the scheduler can see it: submit <= dispatch
  scheduler().submit(instr);
}

// Note [Reused SyncRead]
// item() must not allocate between Python and the VM. Each client thread owns two
// SyncRead markers, created on its first read, with capacity for their one input.
// The scheduler retires a marker without deleting it (Instruction::reusable): it
// clears the input (keeping the vector's capacity) and sets the signal's `retired`
// as its very last touch, so from then on the marker is the client's again. The
// value may be ready earlier (`done`, set by a worker: Note [Markers on a worker]
// in scheduler.cpp); the second marker lets the next read start while the
// scheduler still retires the first. The signal is shared: the scheduler holds a
// reference while it notifies, so a client thread that exits right after its read
// cannot free the signal under it.
struct ReadSlot;
thread_local ReadSlot* t_read_slot = nullptr;  // this thread's, once it has one (for forget_reads_after_fork)

struct ReadSlot {
  std::unique_ptr<Instruction> markers[2];
  Instruction* current = nullptr;  // the marker of the latest read
  ReadSlot() {
    for (auto& instr : markers) {
      instr = std::make_unique<Instruction>();
      instr->kind = Instruction::Kind::kSyncRead;
      instr->reusable = true;
      instr->signal = std::make_shared<SyncSignal>();
      instr->signal->done.store(true, std::memory_order_relaxed);  // free (retired starts true)
      instr->inputs.reserve(1);
      instr->successors.reserve(4);
    }
    current = markers[0].get();
    t_read_slot = this;
  }
  ~ReadSlot() {
    t_read_slot = nullptr;
    // An interrupted read may still be queued: it refers to its marker until it retires.
    if (!Scheduler::started()) return;
    for (auto& instr : markers) {
      while (!instr->signal->retired.load(std::memory_order_acquire)) {
        wait_for(*instr->signal, std::chrono::seconds(1));
        std::this_thread::yield();  // done, and retiring
      }
    }
  }
  // A marker the VM is done with; nullptr if both are still queued (a read interrupted by Ctrl-C, or raised by a
  // stopped scheduler, stays queued until it retires).
  Instruction* take() {
    for (Instruction* instr : {markers[0].get(), markers[1].get()}) {
      if (instr != current && instr->signal->retired.load(std::memory_order_acquire)) return current = instr;
    }
    if (current->signal->retired.load(std::memory_order_acquire)) return current;
    return nullptr;
  }
};

ReadSlot& read_slot() {
  thread_local ReadSlot slot;
  return slot;
}

}  // namespace

void submit(std::unique_ptr<Instruction> instr) {
  trace::observe(trace::Thread::kClient, Range::kSubmit, instr.get());  // Note [odb anchors] in trace.h
  if (admit_here(*instr)) {
    hand_over(instr.release());
  } else {
    recycle(instr.release());  // ran here (synchronous mode)
  }
}

SyncSignal* submit_read(const Tensor& t, void* dst) {
  int64_t enter = t_read_times ? now_ns() : 0;
  Storage& s = *t.storage();
  check_fork_epoch(s);
  if (s.writes_in_flight().load(std::memory_order_acquire) == 0) {
    // Its producer finished (or never ran in the VM): read here, no round trip.
    trace::observe(trace::Thread::kClient, Range::kSyncRead, nullptr);
    if (s.poison()) raise_poison(s.poison());
    std::memcpy(dst, t.data_ptr(), dtype_itemsize(t.dtype()));
    return nullptr;
  }
  ReadSlot& slot = read_slot();
  Instruction* instr = slot.take();
  while (!instr) {
    // Both markers are still queued (reads interrupted by Ctrl-C, or raised by a stopped scheduler): wait for
    // the older to retire.
    struct Wait {
      ReadSlot* slot;
      Instruction* instr;
    } wait{&slot, nullptr};
    run_unlocked([](void* ctx) {
      auto* w = static_cast<Wait*>(ctx);
      Instruction* older = w->slot->markers[0].get() == w->slot->current ? w->slot->markers[1].get()
                                                                         : w->slot->markers[0].get();
      while (!(w->instr = w->slot->take()) && !scheduler_stopped()) {
        if (wait_for(*older->signal, std::chrono::milliseconds(50))) std::this_thread::yield();  // done: retiring
      }
    }, &wait);
    if (!wait.instr) check_not_stalled();
    instr = wait.instr;
  }
  SyncSignal& signal = *instr->signal;
  signal.reset();
  instr->inputs.push_back(t);
  instr->times = t_read_times;
  if (t_read_times) t_read_times->enter = enter;
  if (!admit_here(*instr)) {
    instr->inputs.clear();
    std::memcpy(dst, instr->read_value, sizeof(instr->read_value));
    if (signal.error) raise_poison(signal.error);
    return nullptr;
  }
  trace::observe(trace::Thread::kClient, Range::kSyncRead, instr);
  hand_over(instr);
  if (t_read_times) t_read_times->submitted = now_ns();
  return &signal;
}

void finish_read(void* dst) {
  Instruction* instr = read_slot().current;
  trace::observe(trace::Thread::kClient, Range::kReadDone, instr);
  std::memcpy(dst, instr->read_value, sizeof(instr->read_value));
  check(*instr->signal);
}

void forget_reads_after_fork() {
  if (!t_read_slot) return;
  for (auto& instr : t_read_slot->markers) {
    if (instr->signal->retired.load(std::memory_order_acquire)) continue;
    // Queued in the parent's VM, which the child does not have: the marker is free again.
    empty_read_marker(instr.get());
    instr->signal->done.store(true, std::memory_order_relaxed);
    instr->signal->retired.store(true, std::memory_order_release);
  }
}

void profile_reads(ReadTimes* times) { t_read_times = times; }

std::shared_ptr<SyncSignal> submit_sync(const std::vector<Tensor>& tensors, bool all) {
  auto instr = make_sync(tensors, all);
  auto signal = instr->signal;
  submit(std::move(instr));
  return signal;
}

// Note [Blocking then busy]
// A waiter spins (yielding) where spinning is short: when the marker is ready (its
// dependences are met and the scheduler is finishing it) or when nothing but the
// marker is in flight. Then the VM never pays a futex wake for it: completing a
// marker nobody sleeps on is one store. Otherwise the waiter polls for the online
// time (Note [Staying online]: most sync points follow their work by
// microseconds), then blocks on the signal's condition variable, having first set
// `blocked` (seq_cst, paired with the VM's seq_cst store of ready/done and load of
// blocked: either the waiter sees the flag or the VM sees the sleeper). The VM
// wakes it when the marker becomes ready, and the waiter spins for the last
// stretch (the copy and the retirement) while the scheduler completes it.
bool wait_turn(int64_t waiting_since_ns) {
  if (Scheduler::started()) {
    // Note [A waiter runs the queue] in scheduler.cpp: the scheduler's batch first, then, in the same turn (before
    // the worker it may have woken gets there), the queue of the worker this client thread submits to.
    Scheduler& s = scheduler();
    bool ran = s.help(waiting_since_ns);
    if (s.help_worker(t_thread_id, waiting_since_ns) || ran) return true;
  }
  if (parallel::help()) return true;  // Note [Waiting beside a parallel region]: lend a hand, keep polling
  if (now_ns() - waiting_since_ns < kHelpGraceNs) {
    // Within the grace, poll without yielding: on a busy machine a yield gives this core away for a time
    // slice, and the waiter is about to run the work itself (Note [A waiter runs the queue]).
    for (int k = 0; k < 16; ++k) cpu_relax();
    return false;
  }
  std::this_thread::yield();
  return false;
}

// While it polls, the waiter is counted (Scheduler::start_polling): the comm stream then leaves it what it
// finishes to retire, instead of waking the scheduler thread (Note [The comm stream's hand-offs] in
// scheduler.cpp).
class Polling {
 public:
  Polling() { scheduler().start_polling(); }
  ~Polling() {
    if (polling_) scheduler().stop_polling();
  }
  /** Stop polling to block on the marker until the VM wakes it, then poll again. */
  void block() {
    scheduler().stop_polling(true);
    polling_ = false;
  }
  void unblock() {
    scheduler().unblocked();
    scheduler().start_polling();
    polling_ = true;
  }

 private:
  bool polling_ = true;
};

bool wait_for(SyncSignal& signal, std::chrono::microseconds timeout) {
  if (signal.done.load(std::memory_order_acquire)) return true;
  Polling polling;
  int64_t since = now_ns();
  auto now = std::chrono::steady_clock::now();
  auto deadline = now + timeout;
  auto poll_until = now + std::min<std::chrono::microseconds>(timeout, std::chrono::microseconds(config().online_us));
  for (;;) {
    if (signal.done.load(std::memory_order_acquire)) return true;
    if (signal.ready.load(std::memory_order_acquire) || scheduler().in_flight() < 2) break;  // short: busy
    if (std::chrono::steady_clock::now() >= poll_until) break;
    wait_turn(since);
  }
  if (!signal.ready.load(std::memory_order_acquire) && scheduler().in_flight() >= 2) {
    polling.block();  // may retire what makes the marker ready
    std::unique_lock<std::mutex> lock(signal.mutex);
    signal.blocked.store(true, std::memory_order_seq_cst);
    bool woke = signal.cv.wait_until(lock, deadline, [&] {
      return signal.ready.load(std::memory_order_seq_cst) || signal.done.load(std::memory_order_seq_cst);
    });
    signal.blocked.store(false, std::memory_order_relaxed);
    polling.unblock();
    if (!woke) return false;
  }
  while (!signal.done.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    wait_turn(since);
  }
  return true;
}

void check(const SyncSignal& signal) {
  if (signal.error) raise_poison(signal.error);
}

namespace {
// Waits with the caller's interpreter lock released: VM threads may need it (to
// release numpy buffers, or to name the Python line of a failed op).
// With raise_if_stalled, a wait that can never end (the scheduler is stopped, Note [Parking] in park.h)
// raises instead.
void wait_unlocked(SyncSignal& signal, bool raise_if_stalled) {
  struct Wait {
    SyncSignal* signal;
    bool raise_if_stalled;
  } wait{&signal, raise_if_stalled};
  while (!signal.done.load(std::memory_order_acquire)) {
    run_unlocked(
        [](void* ctx) {
          auto* w = static_cast<Wait*>(ctx);
          while (!wait_for(*w->signal, std::chrono::milliseconds(100))) {
            if (w->raise_if_stalled && scheduler_stopped()) return;
          }
        },
        &wait);
    if (!signal.done.load(std::memory_order_acquire)) check_not_stalled();
  }
}
}  // namespace

void drain() {
  if (Scheduler::started() && scheduler().in_flight() > 0) wait_unlocked(*submit_sync({}, true), false);
}

void drain_unanchored() {
  if (!Scheduler::started() || scheduler().in_flight() == 0) return;
  auto instr = make_sync({}, true);
  auto signal = instr->signal;
  if (admit_here(*instr)) {  // submit(), without its anchor
    hand_over(instr.release());
  } else {
    recycle(instr.release());
  }
  wait_unlocked(*signal, false);
}

void synchronize() {
  if (Scheduler::started() && scheduler().in_flight() > 0) wait_unlocked(*submit_sync({}, true), true);
  raise_unreported_error();
}

std::shared_ptr<SyncSignal> submit_readable(const Tensor& t) {
  Storage& s = *t.storage();
  check_fork_epoch(s);
  if (s.writes_in_flight().load(std::memory_order_acquire) == 0) {
    if (s.poison()) raise_poison(s.poison());
    return nullptr;
  }
  return submit_sync({t}, false);
}

void wait_readable(const Tensor& t) {
  auto signal = submit_readable(t);
  if (!signal) return;
  wait_unlocked(*signal, true);
  check(*signal);
}

void record_error(const std::shared_ptr<const Error>& error) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  if (!g_unreported_error) g_unreported_error = error;
}

void raise_unreported_error() {
  std::shared_ptr<const Error> e;
  {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    e.swap(g_unreported_error);
  }
  if (e) raise(*e);
}

void set_unlocked_runner(UnlockedRunner runner) { g_unlocked_runner.store(runner, std::memory_order_release); }

int current_thread_id() { return t_thread_id; }

void set_current_thread_id(int thread_id) {
  RILL_CHECK(thread_id >= 0 && thread_id < kMaxThreadIds, Value, "[asyncs.thread] VM thread id ", thread_id,
             " is out of range; use a rill.asyncs.Thread()");
  if (thread_id != 0) {
    std::lock_guard<std::mutex> lock(g_ids_mutex);
    RILL_CHECK(g_ids_taken[thread_id], Runtime, "[asyncs.thread] VM thread id ", thread_id,
               " is not reserved (its rill.asyncs.Thread was closed); create a new rill.asyncs.Thread()");
  }
  t_thread_id = thread_id;
}

int reserve_thread_id() {
  int limit = config().worker_thread_limit;
  std::lock_guard<std::mutex> lock(g_ids_mutex);
  for (int id = 1; id < limit; ++id) {
    if (!g_ids_taken[id]) {
      g_ids_taken[id] = true;
      return id;
    }
  }
  RILL_FAIL(Runtime, "[asyncs.Thread] all ", limit, " VM thread ids are in use (thread 0 and ", limit - 1,
            " rill.asyncs.Thread objects); close() threads you no longer need, or raise RILL_VM_WORKER_THREAD_LIMIT "
            "(at most ", kMaxThreadIds, ")");
}

void release_thread_id(int thread_id) {
  if (thread_id <= 0 || thread_id >= kMaxThreadIds) return;
  std::lock_guard<std::mutex> lock(g_ids_mutex);
  g_ids_taken[thread_id] = false;
}

uint64_t num_submitted() { return g_submitted.load(std::memory_order_relaxed); }

uint64_t num_waiter_batches() { return Scheduler::started() ? scheduler().waiter_batches() : 0; }

uint64_t num_waiter_worker_batches() { return Scheduler::started() ? scheduler().waiter_worker_batches() : 0; }

uint64_t num_scheduler_deferrals() { return Scheduler::started() ? scheduler().deferrals() : 0; }
uint64_t num_comm_completions_left() { return Scheduler::started() ? scheduler().comm_completions_left() : 0; }

int64_t num_in_flight() { return Scheduler::started() ? scheduler().in_flight() : 0; }

}  // namespace rill::vm
