#include "rill/vm/worker.h"

#include <pthread.h>

#include <chrono>
#include <string>

#include "rill/vm/config.h"
#include "rill/vm/scheduler.h"

namespace rill::vm {

Worker::Worker(int thread_id, Scheduler* scheduler) : thread_id_(thread_id), scheduler_(scheduler) {
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
  std::deque<Instruction*> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty()) {
        // Note [Staying online]: spin (yielding) a while before sleeping, so the
        // next instruction does not pay a futex wake and a context switch.
        lock.unlock();
        auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(config().online_us);
        while (!has_work_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        lock.lock();
        sleeping_ = true;
        cv_.wait(lock, [&] { return !queue_.empty(); });
        sleeping_ = false;
      }
      has_work_.store(false, std::memory_order_relaxed);
      batch.swap(queue_);
    }
    for (Instruction* instr : batch) {
      instr->run();
      scheduler_->complete(instr);
    }
    batch.clear();
  }
}

}  // namespace rill::vm
