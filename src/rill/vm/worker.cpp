#include "rill/vm/worker.h"

#include <chrono>
#include <string>

#include "rill/vm/config.h"
#include "rill/vm/scheduler.h"
#include "rill/vm/trace.h"
#include "rill/util/spin.h"

namespace rill::vm {

Worker::Worker(int thread_id, Scheduler* scheduler, ParkGate* gate)
    : thread_id_(thread_id), scheduler_(scheduler), gate_(gate) {
  start("rill-worker-" + std::to_string(thread_id_), *gate_, [this] { loop(); });
}

void Worker::push(Instruction* instruction) {
  // Set before the instruction is queued: a waiter reads it under mutex_ after taking the queue.
  if (instruction->stream.pinned()) pinned_.store(true, std::memory_order_relaxed);
  // A waiter running the queue wakes the worker when it lets go with this one left (help).
  if (post(queue_, instruction, [&] { return held_ || !claimed_; })) wake();
}

// Note [A waiter runs the queue] in scheduler.cpp: a client waiting at a sync point takes the claim and runs the
// queue as the worker would, when the worker thread is asleep or has not taken the work within the grace.
bool Worker::help(int64_t waiting_since_ns) {
  int mode = config().waiter_runs_queued;
  if (mode == 0 || pinned_.load(std::memory_order_relaxed) || gate_->stop_requested()) return false;
  // A hint: a stale value only delays or hastens the help.
  if (mode == 1 && !asleep_.load(std::memory_order_relaxed) && now_ns() - waiting_since_ns < kHelpGraceNs)
    return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (claimed_ || queue_.empty() || pinned_.load(std::memory_order_relaxed) || gate_->stop_requested())
      return false;
    claimed_ = true;
    has_work_.store(false, std::memory_order_relaxed);  // its work is taken; a push sets it again
    batch_.swap(queue_);
  }
  run_batch();
  // Work that finishes later belongs on a pinned stream; should an unpinned kernel leave some, it ends here,
  // since the worker polls later_ only under its own claim.
  while (!later_.empty()) {
    if (!poll_later()) spin_yield();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  claimed_ = false;
  if (!queue_.empty() && sleeping_) cv_.notify_one();  // queued meanwhile, and push left the wake to us
  return true;
}

// Note [Kernels that finish later]
// Some kernels start work that ends after they return: a send or receive posted to MPI ends when the other
// rank takes part. Holding the worker until then would serialise the sends and receives of a thread (two
// ranks that each post a receive, then a send, would wait on each other forever), so such a kernel hands
// its work to finish_later() and returns; the worker keeps the instruction in later_ and polls it between
// instructions and while idle, and hands it to the scheduler to retire once the work is done. Its
// successors on other threads wait for that, through their edges, as for any kernel. Program order
// within the thread, which replaces the edges there (Note [Dependences] in dependence.h), is kept by
// waiting before an instruction that touches memory an unfinished one writes, or writes memory it
// reads, and before a sync marker for all of them. An idle worker with work outstanding polls with a
// yield, then in short sleeps, so a receive that waits long costs the machine little.
bool Worker::poll_later() {
  bool any = false;
  for (size_t i = 0; i < later_.size();) {
    Instruction* instr = later_[i];
    if (!instr->poll_pending()) {
      ++i;
      continue;
    }
    later_.erase(later_.begin() + static_cast<std::ptrdiff_t>(i));
    trace::observe(trace::Thread::kWorker, Range::kRunEnd, instr);
    scheduler_->complete(instr);
    any = true;
  }
  return any;
}

void Worker::poll_until_work() {
  int idle = 0;
  while (!later_.empty() && !has_work_.load(std::memory_order_acquire) && !gate_->stop_requested()) {
    if (poll_later()) {
      idle = 0;
    } else if (++idle < 2000) {
      spin_yield();
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_ = true;
      cv_.wait_for(lock, std::chrono::microseconds(200), [&] { return !queue_.empty() || gate_->stop_requested(); });
      sleeping_ = false;
    }
  }
}

void Worker::wait_for_conflicts(const Instruction& next) {
  poll_later();
  auto blocked = [&] {
    if (next.is_sync()) return !later_.empty();
    for (const Instruction* l : later_)
      if (l->conflicts_with(next)) return true;
    return false;
  };
  while (blocked()) {
    if (!poll_later()) spin_yield();
  }
}

void Worker::loop() {
  for (;;) {
    // Note [Parking] in park.h: between batches, holding no lock but the claim, so no waiter runs the queue
    // of a stopped worker.
    if (gate_->stop_requested()) [[unlikely]]
      park_claimed();
    if (held_ && !later_.empty()) poll_until_work();  // held_: written by this thread only, so read unlocked
    if (take_batch()) run_batch();
  }
}

void Worker::park_claimed() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (held_ || !claimed_) {
        claimed_ = held_ = true;
        break;
      }
    }
    std::this_thread::yield();  // a waiter runs a batch: it lets go when done
  }
  gate_->park();
}

// Take the queue as the next batch, with the claim; false when there is nothing to run now (woken to park, to poll
// work that finishes later, or the queue went to a waiter). Between batches with nothing outstanding the claim is
// let go, so a waiter may run what comes next (Note [A waiter runs the queue] in scheduler.cpp).
bool Worker::take_batch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_ && later_.empty()) claimed_ = held_ = false;
  if (held_ && queue_.empty()) {  // parking, or polling again
    has_work_.store(false, std::memory_order_relaxed);  // a stale flag: its work was taken with a batch
    return false;
  }
  auto runnable = [&] { return !queue_.empty() && (held_ || !claimed_); };
  if (!runnable()) {
    if (queue_.empty()) has_work_.store(false, std::memory_order_relaxed);  // a waiter took the work with it
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    // Note [The comm stream's hand-offs] in scheduler.cpp: the comm thread waits for the next collective a little even
    // when no core is free.
    if (pinned_.load(std::memory_order_relaxed)) spin_until(*gate_, now + kCommIdleSpin);
    spin_online(*gate_, now);  // Note [Staying online] in vm_thread.h
    lock.lock();
    sleep(lock, *gate_, runnable);
    if (!runnable()) return false;  // woken to park
  }
  claimed_ = held_ = true;
  has_work_.store(false, std::memory_order_relaxed);
  batch_.swap(queue_);
  return true;
}

// Run the batch in order; the caller holds the claim (the worker thread, or a waiter in help()).
void Worker::run_batch() {
  for (batch_next_ = 0; batch_next_ < batch_.size();) {
    Instruction* instr = batch_[batch_next_++];
    if (!later_.empty()) wait_for_conflicts(*instr);
    running_ = instr;
    trace::observe(trace::Thread::kWorker, Range::kRun, instr);  // Note [odb anchors] in trace.h
    instr->run();
    running_ = nullptr;
    if (instr->pending_work) {  // Note [Kernels that finish later]
      later_.push_back(instr);
      continue;
    }
    trace::observe(trace::Thread::kWorker, Range::kRunEnd, instr);
    if (instr->on_worker) {  // a sync marker queued here (Note [Markers on a worker] in scheduler.cpp)
      if (instr->times) instr->times->ready = instr->times->done = now_ns();
      instr->signal->notify_done();
    }
    scheduler_->complete(instr, batch_next_ < batch_.size() || has_work_.load(std::memory_order_relaxed));
  }
  batch_.clear();
}

}  // namespace rill::vm
