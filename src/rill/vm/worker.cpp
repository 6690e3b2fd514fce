#include "rill/vm/worker.h"

#include <pthread.h>

#include <chrono>
#include <string>

#include "rill/vm/config.h"
#include "rill/vm/scheduler.h"
#include "rill/vm/trace.h"
#include "rill/util/spin.h"

namespace rill::vm {

Worker::Worker(int thread_id, Scheduler* scheduler, ParkGate* gate)
    : thread_id_(thread_id), scheduler_(scheduler), gate_(gate) {
  gate_->attach(
      [](void* self) {
        auto* w = static_cast<Worker*>(self);
        std::lock_guard<std::mutex> lock(w->mutex_);
        w->cv_.notify_one();
      },
      this);
  thread_ = std::thread([this] { loop(); });
  thread_.detach();  // lives as long as the process (the VM is never torn down)
}

void Worker::push(Instruction* instruction) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(instruction);
    wake = sleeping_;
  }
  has_work_.store(true, std::memory_order_release);  // seen by the online spin below
  if (wake) cv_.notify_one();
}

void Worker::loop() {
  std::string name = "rill-worker-" + std::to_string(thread_id_);
  pthread_setname_np(pthread_self(), name.c_str());
  for (;;) {
    // Note [Parking] in park.h: between batches, holding no lock.
    if (gate_->stop_requested()) [[unlikely]]
      gate_->park();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty()) {
        // Note [Staying online]: spin (yielding) a while before sleeping, so the
        // next instruction does not pay a futex wake and a context switch; a slow
        // yield ends it (Note [Spinning on a busy machine] in util/spin.h).
        lock.unlock();
        auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(config().online_us);
        while (!has_work_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
          if (!spin_yield()) break;
        lock.lock();
        sleeping_ = true;
        cv_.wait(lock, [&] { return !queue_.empty() || gate_->stop_requested(); });
        sleeping_ = false;
        if (queue_.empty()) continue;  // woken to park
      }
      has_work_.store(false, std::memory_order_relaxed);
      batch_.swap(queue_);
    }
    for (batch_next_ = 0; batch_next_ < batch_.size();) {
      Instruction* instr = batch_[batch_next_++];
      running_ = instr;
      rill_odb_anchor_worker(Range::kRun, instr);  // Note [odb anchors] in trace.h
      trace::note(trace::Event::kStart, *instr);
      instr->run();
      trace::note(trace::Event::kEnd, *instr);
      running_ = nullptr;
      if (instr->on_worker) {  // a sync marker queued here (Note [Markers on a worker] in scheduler.cpp)
        if (instr->times) instr->times->ready = instr->times->done = now_ns();
        instr->signal->notify_done();
      }
      scheduler_->complete(instr);
    }
    batch_.clear();
  }
}

}  // namespace rill::vm
