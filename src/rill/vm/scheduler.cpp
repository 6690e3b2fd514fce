#include "rill/vm/scheduler.h"

#include <pthread.h>

#include <chrono>

#include "rill/vm/config.h"
#include "rill/vm/dependence.h"
#include "rill/vm/trace.h"
#include "rill/util/spin.h"

namespace rill::vm {

namespace {
// Leaked on purpose: VM threads run until the process ends, and tensors may be
// released during static destruction. A forked child drops it (Note [Fork]).
std::atomic<Scheduler*> g_scheduler{nullptr};
std::mutex g_start_mutex;
}  // namespace

Scheduler& Scheduler::get() {
  Scheduler* s = g_scheduler.load(std::memory_order_acquire);
  if (s) return *s;
  std::lock_guard<std::mutex> lock(g_start_mutex);
  s = g_scheduler.load(std::memory_order_relaxed);
  if (!s) {
    s = new Scheduler();
    g_scheduler.store(s, std::memory_order_release);
  }
  return *s;
}

bool Scheduler::started() { return g_scheduler.load(std::memory_order_acquire) != nullptr; }

void Scheduler::forget_after_fork() {
  g_scheduler.store(nullptr, std::memory_order_relaxed);
  new (&g_start_mutex) std::mutex();
}

// Room for a burst of submissions before the queues grow: a client's push then allocates nothing (the
// scheduler swaps each queue with a second one of the same capacity, Note [Reused SyncRead]).
constexpr size_t kQueueCapacity = 1024;

Scheduler::Scheduler() {
  inbox_.reserve(kQueueCapacity);
  completions_.reserve(kQueueCapacity);
  taken_inbox_.reserve(kQueueCapacity);
  taken_completions_.reserve(kQueueCapacity);
  trace::start_from_env();
  start("rill-scheduler", gate_, [this] { loop(); });
}

void Scheduler::submit(Instruction* instruction) {
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  // Read before it is posted: from then on another thread may run, retire and reuse it.
  const bool admit_here = instruction->stream.pinned() || instruction->is_sync();
  if (!post(inbox_, instruction)) return;
  // Note [A waiter runs the queue]: with no core free, run it here rather than wake the scheduler; and a
  // collective, or a sync marker its client is about to wait on, is admitted here (Note [The comm stream's
  // hand-offs]).
  int mode = config().waiter_runs_queued;
  if (mode != 0 && (mode == 2 || admit_here || now_ns() < no_free_core_until_.load(std::memory_order_relaxed)) &&
      !gate_.stop_requested()) {
    std::unique_lock<std::mutex> drive(drive_mutex_, std::try_to_lock);
    if (drive.owns_lock()) {
      if (run_batch()) waiter_batches_.fetch_add(1, std::memory_order_relaxed);  // a count: no ordering
      return;
    }
  }
  wake();
}

// Note [The comm stream's hand-offs]
// A collective's round trip is client -> comm thread -> client: the client submits it, the comm thread runs the
// MPI call (Note [The comm stream] in comm/collectives.cpp), the client reads the result. With a rank on every
// core (two ranks on a 2-core machine) the scheduler thread has no core of its own, and each wake-up of it takes
// one from a rank's comm thread or client in the middle of a collective: a 4-byte all_reduce waited for cost
// 31-41 us against MPI's 1.5-1.8 (bench/comm.py), the scheduler waking once or twice per call. So the scheduler
// thread stays out of the round trip:
// - A client admits a collective, and a sync marker it is about to wait on, itself when the scheduler thread
//   sleeps (Scheduler::submit): admitting takes a fraction of a microsecond, a wake-up microseconds and a core.
// - A marker behind a collective is not queued on the comm thread (Note [Markers on a worker]): the client that
//   retires the collective completes the marker on its own thread.
// - The comm thread hands a finished instruction back without waking the scheduler when a client polls at a sync
//   point (it retires it, wait_turn -> help), or when the scheduler sleeps with a deadline and either no client
//   waits blocked (at a sync point or for the in-flight bound) or more collectives are queued behind it (the last
//   of a run wakes it: a client blocked on a loop of 200 1-MiB all_reduces woke the scheduler 200 times, each
//   wake-up preempting a rank's comm thread mid-collective, and the loop ran 1.1-1.9x MPI's time, bimodally). Once
//   the comm stream is in use the scheduler sleeps at most kCommRetireNs, so a completion nobody polls for is
//   retired within that, by it or by the next client that submits or waits; a deadline that finds nothing queued
//   sends it back to sleep.
// - A client that stops polling (its wait is over, or it is about to block) retires what was left meanwhile, or
//   wakes the scheduler when it cannot (stop_polling).
// - The comm thread, out of work, yields for kCommIdleSpin before it sleeps even when no core is free (Note
//   [Waiting for a core] in util/spin.h would have it sleep at once): collectives come in runs (a latency loop,
//   DDP's buckets, an all_gather after an all_reduce), and a sleeping comm thread costs the next one a futex wake
//   from the client and a wake-up. 20-50 us measured alike; 200 us (the online time) hurt, the spinner then taking
//   the other rank's core.
// - The scheduler does not leave its work to the clients once the comm stream is in use (Note [Waiting for a
//   core]): the ranks' own threads make the cores look taken, and a rank whose client is blocked at a sync point
//   while the scheduler sleeps for kLeaveToClientsNs leaves the compute a collective waits for undone, so every
//   rank waits that long: DDP over 2 ranks on 2 cores stalled 100 ms in 1 step of 10 (mean step 7.7-18.6 ms
//   against a median of 0.8; 0.61-0.74 ms mean with this rule).
// The counts and the completion queue pair up as in a Dekker handshake: the comm thread posts (under mutex_) and
// then reads the counts; a client changes its count and then looks at the queue (under mutex_); either the client
// sees the completion or the comm thread sees the client. RILL_VM_WAITER_RUNS_QUEUED=0 turns all of it off: the
// scheduler thread then does all the admitting and retiring, as odb's stepping expects.
void Scheduler::complete(Instruction* instruction, bool more_queued) {
  const bool pinned = instruction->stream.pinned();  // once posted, the instruction may be retired and reused
  bool comes_back = false;                           // the scheduler sleeps with a deadline
  auto its_turn = [&] {
    comes_back = sleep_has_deadline_;
    return true;
  };
  if (!post(completions_, instruction, its_turn)) return;
  if (pinned && config().waiter_runs_queued != 0 &&
      (polling_waiters_.load(std::memory_order_seq_cst) > 0 ||
       (comes_back && (more_queued || (blocked_waiters_.load(std::memory_order_seq_cst) == 0 &&
                                       drained_waiters_.load(std::memory_order_seq_cst) == 0))))) {
    comm_completions_left_.fetch_add(1, std::memory_order_relaxed);  // a count: no ordering
    return;
  }
  wake();
}

void Scheduler::stop_polling(bool to_block) {
  if (to_block) blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  polling_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  bool left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left = sleeping_ && !completions_.empty();
  }
  // Retire it here as a waiter would (no grace: the scheduler sleeps); when that takes nothing (another thread
  // runs a batch now, maybe a client that returns to Python after it), make sure someone looks again.
  if (left && !help(0)) wake();
}

bool Scheduler::wait_in_flight_below(int64_t limit) {
  drained_waiters_.fetch_add(1, std::memory_order_acq_rel);
  bool below = true;
  {
    std::unique_lock<std::mutex> lock(drained_mutex_);
    // A stopped scheduler retires nothing (Note [Parking] in park.h): give up rather than hang.
    auto drained = [&] { return in_flight() < limit; };
    while (below && !drained_cv_.wait_for(lock, std::chrono::milliseconds(50), drained))
      below = !gate_.stop_requested();
  }
  drained_waiters_.fetch_sub(1, std::memory_order_acq_rel);
  return below;
}

Worker* Scheduler::worker(int thread_id) {
  if (!workers_[thread_id]) {
    workers_[thread_id] = std::make_unique<Worker>(thread_id, this, &worker_gates_[thread_id]);
    published_[thread_id].store(workers_[thread_id].get(), std::memory_order_release);  // a waiter sees it built
  }
  return workers_[thread_id].get();
}

bool Scheduler::help_worker(int thread_id, int64_t waiting_since_ns) {
  Worker* w = published_[thread_id].load(std::memory_order_acquire);  // pairs with worker()'s release
  if (!w || !w->help(waiting_since_ns)) return false;
  waiter_worker_batches_.fetch_add(1, std::memory_order_relaxed);  // a count: no ordering
  return true;
}

// Take what clients and workers queued and handle it: completions first (they may unblock the heads of the
// FIFOs new work joins), then submissions. Called holding drive_mutex_; true if there was anything. (Indexed
// through members, so odb can tell the entries not handled yet.)
bool Scheduler::run_batch() {
  std::vector<Instruction*>& inbox = taken_inbox_;
  std::vector<Instruction*>& completions = taken_completions_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inbox.swap(inbox_);
    completions.swap(completions_);
  }
  if (inbox.empty() && completions.empty()) return false;
  for (next_retire_ = 0; next_retire_ < completions.size();) retire(completions[next_retire_++]);
  for (next_admit_ = 0; next_admit_ < inbox.size();) admit(inbox[next_admit_++]);
  completions.clear();
  inbox.clear();
  return true;
}

// Note [A waiter runs the queue]
// On a busy machine (DataLoader workers, a second job, a compile beside the training loop) the scheduler
// thread is often not on a core when a client reaches a sync point: it sleeps, or it is runnable and waits
// for a time slice, and every hand-off costs milliseconds instead of microseconds (`(v * 2).sum().item()`
// measured two orders of magnitude slower than PyTorch, which runs on the calling thread). The client has
// nothing to do but wait, so it takes the scheduler's role: the loop body (run_batch: retire completions,
// admit, link, dispatch, run thread 0's instructions inline) runs under drive_mutex_, whoever holds it, so a
// waiter that gets the mutex with try_lock handles the queued batch on its own thread exactly as the
// scheduler would, in the same order, with the same dependences, poisoning and retirement; the scheduler
// thread, when it comes round, finds the work done. A waiter helps only where the scheduler is not at it:
// when it sleeps (asleep_), or when the waiter has waited kHelpGrace (1 us) without the work being taken (a
// scheduler that spins on a core of its own takes a submission sooner; one that is mid-batch holds the mutex).
// The grace was 10 us at first; measured on 2 vCPUs with a rill.asyncs worker, the OS put the scheduler on
// the waiter's core, where it ran only when the waiter yielded, so every `x.add_(1); x.item()` paid the
// whole grace (8-14 us against PyTorch's 2.6). A scheduler woken by a submission stays awake whether or not
// the work is still there (VmThread::wake): when it went back to sleep, every later submission paid a futex
// wake (about 10 us on this VM's client thread) for work its waiter then ran anyway. And the scheduler does
// not block on drive_mutex_ while a waiter holds it: it yields and looks again (Scheduler::loop). On a quiet
// machine the scheduler thread still runs what is submitted without a wait after it. Fork and odb
// keep their rules: the scheduler parks holding drive_mutex_, so nobody runs a batch behind a stopped scheduler
// (Note [Parking] in park.h), and a waiter is a client thread, which the fork handler drains like any other.
// A worker's queue is taken over the same way. A kernel of a thread id with a worker (a rill.asyncs thread;
// thread 0 with compute on the worker) would otherwise cost two more hand-offs: the worker wakes and runs it,
// then signals back. So a waiter, after the scheduler's batch, runs the queue of the worker its own thread
// submits to (help_worker, Worker::help) when the worker sleeps or has left the queue unclaimed for the same
// grace (a worker on a core claims queued work within a microsecond, and each microsecond more is paid at every
// sync point of a rill.asyncs thread). Order: whoever runs a thread id's instructions holds its claim
// (Worker::claimed_, under the worker's mutex_), taken together with the whole queue and kept until that batch
// has run; the worker thread takes it with each batch, keeps it while work that finishes later is outstanding,
// and lets go between batches. So one thread at a time runs a thread id's instructions, in queue order. The
// waiter runs them as the worker would (Worker::run_batch: a marker queued on the worker is completed there,
// every instruction is handed back to be retired), so the dependences, the poisoning and the errors raised at the
// next sync point are the same. A push to a queue a waiter holds does not wake the worker; the waiter wakes it if
// it lets go with work left. Never taken over: a pinned worker, one that was ever given an instruction of a
// pinned stream (Stream::pinned: the comm stream, whose kernels call MPI from the one thread that initialised it,
// Note [The comm stream] in comm/collectives.cpp), and a stopped one (odb), which parks holding its claim. Work
// that finishes later belongs on a pinned stream; a waiter that meets some anyway polls it to the end before it
// lets go.
// Spinning backs off when it does not pay (Note [Staying online]): a waiter that had to run a batch while
// the scheduler was nominally online sets spin_missed_, and the scheduler's next idle spell skips its spin.
// When the scheduler's spin finds no core free (a slow yield, Note [Spinning on a busy machine] in
// util/spin.h), it sleeps, and for the next kNoFreeCoreNs a client that submits to it asleep runs the batch
// itself instead of waking it: with every core taken there is no second core to overlap Python with the
// kernels, and a wake-up would cost a futex call and a context switch per op. Past that time the next
// submission wakes the scheduler again, whose spin measures anew.
// RILL_VM_WAITER_RUNS_QUEUED=0 leaves every batch to the scheduler thread (odb stepping, traces that check
// which thread ran what); 2 makes waiters and submitters take every batch they can, whatever the scheduler
// does (tests of this path).
bool Scheduler::help(int64_t waiting_since_ns) {
  int mode = config().waiter_runs_queued;
  if (mode == 0 || gate_.stop_requested()) return false;
  bool asleep = asleep_.load(std::memory_order_relaxed);  // a hint: a stale value only delays or hastens help
  if (mode == 1 && !asleep && now_ns() - waiting_since_ns < kHelpGraceNs) return false;
  std::unique_lock<std::mutex> drive(drive_mutex_, std::try_to_lock);
  if (!drive.owns_lock()) return false;  // the scheduler (or another waiter) is at it
  if (!run_batch()) return false;
  waiter_batches_.fetch_add(1, std::memory_order_relaxed);  // a count: no ordering
  if (!asleep) spin_missed_.store(true, std::memory_order_relaxed);  // a hint for the scheduler's next spin
  return true;
}

void Scheduler::loop() {
  auto last_work = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point locked_out_since;  // since when a waiter holds drive_mutex_ (zero: it does not)
  bool spin = true;
  bool deferred = false;  // the last turn left the work to the clients
  for (;;) {
    // Note [Parking] in park.h: between batches. It parks holding drive_mutex_, so no waiter runs a batch
    // behind a stopped scheduler (Note [A waiter runs the queue]).
    if (gate_.stop_requested()) [[unlikely]] {
      std::lock_guard<std::mutex> drive(drive_mutex_);
      gate_.park();
    }
    if (has_work_.exchange(false, std::memory_order_acquire)) {
      if (leave_to_clients(deferred)) {  // Note [Waiting for a core]
        deferred = true;
        continue;
      }
      deferred = false;
      {
        // A waiter may hold drive_mutex_, running a batch (Note [A waiter runs the queue]). Blocking on the mutex
        // would cost that waiter a futex wake when it lets go and this thread a wake-up (43 us measured on a
        // 2-vCPU VM), during which the waiter's next submission waits out its grace and is run by the waiter
        // again: a convoy in which every op paid both. So look again after a yield, for the online time while a
        // core is free (Note [Staying online]); block when a yield was slow or the waiter's batch runs long.
        std::unique_lock<std::mutex> drive(drive_mutex_, std::try_to_lock);
        if (!drive.owns_lock()) {
          auto now = std::chrono::steady_clock::now();
          if (locked_out_since == std::chrono::steady_clock::time_point{}) locked_out_since = now;
          has_work_.store(true, std::memory_order_relaxed);  // what the waiter did not take is still ours
          if (now - locked_out_since < std::chrono::microseconds(config().online_us) && spin_yield()) continue;
          drive.lock();
        }
        locked_out_since = {};
        run_batch();
      }
      last_work = std::chrono::steady_clock::now();
      spin = !spin_missed_.exchange(false, std::memory_order_relaxed);
      continue;
    }
    // Note [Staying online] in vm_thread.h; a spin that finds no core free is a hint for submit().
    if (spin) {
      Spin how = spin_online(gate_, last_work);
      if (how == Spin::kWork) continue;
      spin = false;
      if (how == Spin::kNoFreeCore) no_free_core_until_.store(now_ns() + kNoFreeCoreNs, std::memory_order_relaxed);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    auto queued = [&] { return !inbox_.empty() || !completions_.empty(); };
    if (comm_stream_used_.load(std::memory_order_relaxed)) {
      // Note [The comm stream's hand-offs]: the comm stream may leave its completions unannounced meanwhile; a
      // deadline that finds nothing queued goes back to sleep (no online spin).
      sleep_has_deadline_ = true;
      while (!sleep(lock, gate_, queued, std::chrono::nanoseconds(kCommRetireNs))) {
      }
      sleep_has_deadline_ = false;
    } else {
      sleep(lock, gate_, queued);  // sets asleep_, a hint for help
    }
    spin = true;
    has_work_.store(true, std::memory_order_relaxed);
  }
}

// Note [Waiting for a core]
// A step of a compute-bound model (the encoder layer of bench/run.py: 30 ms of kernels) keeps the scheduler
// thread busy from its first op to its sync point, and the client thread runs Python beside it: on a quiet
// machine the two overlap on two cores. When other processes take the cores, the kernel shares the CPU among
// scheduling groups (a process, or its session with autogroups), not threads: rill's two threads then split
// one share, and the work hopping between them waits for a time slice at each hand-off. Measured with two
// busy-loop processes in their own sessions (`bench/run.py --background 2`), the step took 1.1-1.6x
// PyTorch's time, which runs everything on the calling thread; with every batch run by the submitting client
// (RILL_VM_WAITER_RUNS_QUEUED=2) it took 0.8-0.9x. So when the scheduler finds itself waiting for a core
// (cores_contended(), its run delay, Note [Waiting for a core] in util/spin.h) it leaves queued work to the
// clients: it marks the cores taken for kLeaveToClientsNs, in which a submitting client runs the batch at once and a
// waiter takes it without a grace (Note [A waiter runs the queue]), and sleeps for that long or until woken.
// When it comes back it runs one batch, whoever left it (a completion from a worker, work a client queued and
// went on), so nothing waits longer than kLeaveToClientsNs, and then looks at its run delay again. It does not
// leave work while a client waits for the in-flight bound to fall (back-pressure waits do not help), nor with
// RILL_VM_WAITER_RUNS_QUEUED=0, nor when asked to park.
bool Scheduler::leave_to_clients(bool deferred) {
  // Not in a process of several (Note [The comm stream's hand-offs]): its own ranks' threads make the cores look
  // taken, and its clients block at sync points while collectives run.
  if (deferred || config().waiter_runs_queued == 0 || comm_stream_used_.load(std::memory_order_relaxed) ||
      !cores_contended())
    return false;
  if (drained_waiters_.load(std::memory_order_acquire) > 0 || gate_.stop_requested()) return false;
  no_free_core_until_.store(now_ns() + kLeaveToClientsNs, std::memory_order_relaxed);
  deferrals_.fetch_add(1, std::memory_order_relaxed);  // a count: no ordering
  std::unique_lock<std::mutex> lock(mutex_);
  sleep(lock, gate_, [] { return false; }, std::chrono::nanoseconds(kLeaveToClientsNs));  // whatever is queued
  has_work_.store(true, std::memory_order_relaxed);  // look at the queues again whatever woke it
  return true;
}

bool Scheduler::on_a_worker(int thread_id) const { return thread_id != 0 || config().compute_on_worker; }

// Note [Markers on a worker]
// A sync marker normally waits on the scheduler for the instructions it follows, and the scheduler completes
// it when the last of them retires. When everything it follows runs on one worker thread, that is one hop too
// many: the worker hands its last kernel back to the scheduler, which only then completes the marker, and
// with compute on the worker (RILL_VM_COMPUTE_ON_WORKER_THREAD=1) item() paid both hops. Such a SyncRead is
// instead queued on that worker behind what it follows (thread order replaces the edges, as between two
// kernels of one thread, Note [Dependences]); the worker copies the value, completes the signal and hands the
// marker back to be retired like a kernel. The waiter may therefore see done before the scheduler retires the
// marker, or the kernels before it: a reused SyncRead is the client's again only once `retired` is set (Note
// [Reused SyncRead]). Only SyncReads go this way: the other markers (synchronize(), the drain before a fork,
// numpy()) promise that what they follow has retired, its memory released and its writes counted down.
void Scheduler::place_marker(Instruction* instr) {
  int tid = -1;
  auto on_same_worker = [&](const void* pred) {
    if (!pred) return true;
    const Stream& stream = static_cast<const Instruction*>(pred)->stream;  // a kernel: only kernels write
    int t = stream.thread_id;
    // Not behind a collective: a polling client retires the collective and completes the marker itself
    // (Note [The comm stream's hand-offs]).
    if (!on_a_worker(t) || stream.pinned() || (tid >= 0 && t != tid)) return false;
    tid = t;
    return true;
  };
  for (const Tensor& t : instr->inputs)
    if (!on_same_worker(t.storage()->accesses().last_write)) return;
  if (instr->sync_all) {
    for (Instruction* last : last_)
      if (!on_same_worker(last)) return;
  }
  if (tid < 0) return;  // it follows nothing in flight: the scheduler completes it at once
  instr->on_worker = true;
  instr->stream.thread_id = static_cast<int16_t>(tid);
}

void Scheduler::admit(Instruction* instr) {
  trace::observe(trace::Thread::kScheduler, Range::kSchedule, instr);
  if (instr->kind == Instruction::Kind::kSyncRead) place_marker(instr);
  link_dependences(instr);
  if (instr->is_sync() && !instr->on_worker) {
    if (instr->sync_all) {
      for (Instruction* last : last_)
        if (last) add_edge(last, instr);
    }
    if (instr->pending == 0) dispatch(instr);
    return;
  }
  int tid = instr->stream.thread_id;
  if (!instr->is_sync()) last_[tid] = instr;
  fifo_[tid].push_back(instr);
  if (fifo_[tid].size() == 1) pump(tid);
}

// Dispatch the head of a thread's FIFO while its cross-thread dependences are met.
void Scheduler::pump(int tid) {
  std::deque<Instruction*>& q = fifo_[tid];
  while (!q.empty() && q.front()->pending == 0) {
    Instruction* head = q.front();
    q.pop_front();
    dispatch(head);
  }
}

void Scheduler::dispatch(Instruction* instr) {
  trace::observe(trace::Thread::kScheduler, Range::kDispatch, instr);
  if (instr->is_sync() && !instr->on_worker) {
    if (instr->times) instr->times->ready = now_ns();
    instr->signal->notify_ready();  // a blocked waiter wakes while the marker finishes
    run_inline(instr);
    retire(instr);
    return;
  }
  if (instr->on_worker || on_a_worker(instr->stream.thread_id)) {
    if (instr->stream.pinned() && !comm_stream_used_.load(std::memory_order_relaxed))
      comm_stream_used_.store(true, std::memory_order_relaxed);  // read by the scheduler thread before it sleeps
    worker(instr->stream.thread_id)->push(instr);
    return;
  }
  run_inline(instr);
  retire(instr);
}

void Scheduler::run_inline(Instruction* instr) {
  trace::observe(trace::Thread::kScheduler, Range::kRun, instr);
  running_ = instr;
  instr->run();
  running_ = nullptr;
  trace::observe(trace::Thread::kScheduler, Range::kRunEnd, instr);
}

void Scheduler::retire(Instruction* instr) {
  trace::observe(trace::Thread::kScheduler, Range::kRelease, instr);
  unlink_dependences(instr);
  if (instr->kind == Instruction::Kind::kKernel) {
    int tid = instr->stream.thread_id;
    if (last_[tid] == instr) last_[tid] = nullptr;
    // release: a client that reads 0 sees the kernel's writes (and its poison).
    for (const Tensor& t : instr->outputs) t.storage()->writes_in_flight().fetch_sub(1, std::memory_order_release);
  }
  for (Instruction* s : instr->successors) {
    if (--s->pending != 0) continue;
    if (s->is_sync() && !s->on_worker) {
      dispatch(s);
    } else if (!fifo_[s->stream.thread_id].empty() && fifo_[s->stream.thread_id].front() == s) {
      pump(s->stream.thread_id);
    }
  }
  std::shared_ptr<SyncSignal> signal;  // outlives the marker: its waiter may free it once done
  bool completed = instr->on_worker;   // its worker completed the signal already (Note [Markers on a worker])
  ReadTimes* times = completed ? nullptr : instr->times;
  if (instr->reusable) {
    // Note [Reused SyncRead]: the client thread owns this marker; leave it empty for its next read.
    signal = instr->signal;
    empty_read_marker(instr);
  } else {
    signal = std::move(instr->signal);
    recycle(instr);  // releases the operands; the emptied instruction is reused (Note [Instruction pool])
  }
  int64_t left = in_flight_.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (signal) {
    if (times) times->done = now_ns();
    if (!completed) signal->notify_done();
    signal->notify_retired();  // last touch of a reused marker
  }
  if (drained_waiters_.load(std::memory_order_acquire) > 0 && left < config().max_in_flight / 2) {
    std::lock_guard<std::mutex> lock(drained_mutex_);
    drained_cv_.notify_all();
  }
}

}  // namespace rill::vm
