// vm/: a client waiting at a sync point runs the queued batch in the scheduler's place (Note [A waiter runs the
// queue] in vm/scheduler.cpp): order, dependences across VM threads and poisoning hold whoever runs a batch.
// Also built with ThreadSanitizer by scripts/tsan.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/env.h"
#include "rill/vm/virtual_machine.h"

namespace rill {
namespace {

float read_float(const Tensor& t) {
  alignas(16) unsigned char value[16];
  if (vm::SyncSignal* signal = vm::submit_read(t, value)) {
    while (!vm::wait_for(*signal, std::chrono::seconds(1))) {
    }
    vm::finish_read(value);
  }
  float v;
  std::memcpy(&v, value, sizeof v);
  return v;
}

// Waiters and submitters take every batch they can (RILL_VM_WAITER_RUNS_QUEUED=2) while the scheduler thread,
// which blocks right after each batch (no online spin), takes the others; busy threads keep the cores taken,
// as on a loaded machine.
class VMWaiter : public ::testing::Test {
 protected:
  void SetUp() override {
    env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", "0");
    env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "2");
    for (int k = 0; k < 3; ++k)
      busy_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {  // only a flag: nothing else is published through it
        }
      });
  }
  void TearDown() override {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : busy_) t.join();
    env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", std::nullopt);
    env::set_override("RILL_VM_WAITER_RUNS_QUEUED", std::nullopt);
  }
  std::atomic<bool> stop_{false};
  std::vector<std::thread> busy_;
};

TEST_F(VMWaiter, KeepsOrderAndPoisonWhenWaitersRunBatches) {
  uint64_t before = vm::num_waiter_batches();
  constexpr int kClients = 2;
  std::vector<int> wrong(kClients, 0), unraised(kClients, 0);
  std::vector<std::thread> clients;
  Tensor shared = eager::full({1000}, Scalar(1.0), DType::kFloat32);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Tensor x = eager::full({1000}, Scalar(0.0), DType::kFloat32);
      for (int i = 1; i <= 2000; ++i) {
        x = eager::binary(eager::op("add"), x, shared);
        Tensor s = eager::reduce(eager::op("sum"), eager::binary(eager::op("mul"), x, shared), {}, false);
        if (read_float(s) != 1000.0f * static_cast<float>(i)) ++wrong[c];
        if (i % 200 == 0) {
          // A kernel error raised at a sync point after a waiter ran it: its dependents are poisoned.
          Tensor base = eager::full({4}, Scalar(int64_t{2}), DType::kInt64);
          Tensor bad = eager::binary(eager::op("pow"), base, eager::full({4}, Scalar(int64_t{-1}), DType::kInt64));
          Tensor later = eager::binary(eager::op("add"), bad, base);
          try {
            vm::wait_readable(later);
            ++unraised[c];
          } catch (const Error&) {
          }
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  try {
    vm::synchronize();
  } catch (const Error&) {  // a poison the other client's read already reported may still be recorded
  }
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(wrong[c], 0) << "client " << c << " read a value out of order";
    EXPECT_EQ(unraised[c], 0) << "client " << c << " read a poisoned tensor without an error";
  }
  EXPECT_GT(vm::num_waiter_batches(), before) << "no waiter ran a batch: the test did not exercise the path";
}

TEST_F(VMWaiter, OffKnobLeavesBatchesToTheScheduler) {
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "0");
  uint64_t before = vm::num_waiter_batches();
  Tensor x = eager::full({16}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({16}, Scalar(1.0), DType::kFloat32);
  for (int i = 1; i <= 100; ++i) {
    x = eager::binary(eager::op("add"), x, one);
    EXPECT_EQ(read_float(eager::select(x, 0, 3)), static_cast<float>(i));
  }
  EXPECT_EQ(vm::num_waiter_batches(), before);
}

}  // namespace
}  // namespace rill
