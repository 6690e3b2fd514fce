// vm/: item()'s SyncRead path (Note [Reused SyncRead]) and async thread ids.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

#include "rill/eager/functional.h"
#include "rill/vm/config.h"
#include "rill/vm/virtual_machine.h"
#include "rill/util/env.h"
#include "../allocations.h"
#include "../values.h"

namespace rill {
namespace {

// Read t's one element the way item() does: the reused SyncRead, or at once.
template <typename T>
T read(const Tensor& t, bool* went_through_vm = nullptr) {
  alignas(16) unsigned char value[16];
  vm::SyncSignal* signal = vm::submit_read(t, value);
  if (went_through_vm) *went_through_vm = signal != nullptr;
  if (signal) {
    while (!vm::wait_for(*signal, std::chrono::seconds(1))) {
    }
    vm::finish_read(value);
  }
  T v;
  std::memcpy(&v, value, sizeof(T));
  return v;
}

TEST(SyncRead, ReadsEveryDtype) {
  EXPECT_EQ(read<int64_t>(eager::full({1}, Scalar(int64_t{7}), DType::kInt64)), 7);
  EXPECT_EQ(read<bool>(eager::full({}, Scalar(true), DType::kBool)), true);
  EXPECT_EQ(static_cast<float>(read<Half>(eager::full({1, 1}, Scalar(1.5), DType::kFloat16))), 1.5f);
  Tensor x = eager::full({3}, Scalar(2.0), DType::kFloat32);
  EXPECT_EQ(read<float>(eager::select(eager::binary(eager::op("add"), x, x), 0, 2)), 4.0f);
}

TEST(SyncRead, SubmissionAllocatesNothingOnceWarm) {
  // The reads must find their sum still queued or running: a client running the queue itself (Note [A waiter
  // runs the queue] in vm/scheduler.cpp, which a loaded machine turns on) would finish it at submission.
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "0");
  Tensor big = eager::full({1 << 22}, Scalar(1.0), DType::kFloat32);
  const OpSchema& sum = eager::op("sum");
  // Warm up: creates this thread's SyncRead (the scheduler's queues come with room reserved).
  for (int i = 0; i < 4; ++i) (void)read<float>(eager::reduce(sum, big, {}, false));
  int through_vm = 0;
  for (int i = 0; i < 20; ++i) {
    Tensor s = eager::reduce(sum, big, {}, false);  // 4M elements: still running when we read
    alignas(16) unsigned char value[16];
    test::count_allocations(true);
    vm::SyncSignal* signal = vm::submit_read(s, value);
    test::count_allocations(false);
    EXPECT_EQ(test::allocations(), 0) << "read " << i << " allocated on the way to the VM";
    if (signal) {
      ++through_vm;
      while (!vm::wait_for(*signal, std::chrono::seconds(1))) {
      }
      vm::finish_read(value);
    }
    float v;
    std::memcpy(&v, value, sizeof v);
    EXPECT_EQ(v, static_cast<float>(1 << 22));
  }
  if (vm::config().multi_thread) {
    EXPECT_GT(through_vm, 0) << "no read went through the VM: the test did not exercise the SyncRead";
  }
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", std::nullopt);
}

TEST(SyncRead, FinishedProducerIsReadWithoutTheVM) {
  Tensor x = eager::full({1}, Scalar(3.0), DType::kFloat32);
  vm::synchronize();
  uint64_t before = vm::num_submitted();
  bool through_vm = true;
  EXPECT_EQ(read<float>(x, &through_vm), 3.0f);
  EXPECT_FALSE(through_vm);
  EXPECT_EQ(vm::num_submitted(), before);
}

TEST(SyncRead, PoisonIsRaised) {
  Tensor base = eager::full({1}, Scalar(int64_t{2}), DType::kInt64);
  Tensor bad = test::failing_kernel({1});
  EXPECT_THROW(read<float>(bad), Error);
  EXPECT_EQ(read<int64_t>(base), 2);  // the VM keeps going
}

// Note [Markers on a worker]: with compute on the worker, a read that follows only that worker's kernels is
// completed by the worker; the two reused markers alternate, and each value is the latest.
TEST(SyncRead, MarkersCompletedOnTheWorker) {
  env::set_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", "1");
  const OpSchema& add = eager::op("add");
  const OpSchema& sum = eager::op("sum");
  Tensor one = eager::full({1}, Scalar(1.0), DType::kFloat32);
  Tensor x = eager::full({1}, Scalar(0.0), DType::kFloat32);
  Tensor big = eager::full({1 << 20}, Scalar(1.0), DType::kFloat32);
  int through_vm = 0;
  for (int i = 1; i <= 500; ++i) {
    x = eager::binary(add, x, one);
    if (i % 50 == 0) (void)eager::reduce(sum, big, {}, false);  // a longer kernel ahead of the read, now and then
    bool vm_read = false;
    ASSERT_EQ(read<float>(x, &vm_read), static_cast<float>(i));
    through_vm += vm_read;
    if (i % 100 == 0) vm::synchronize();  // a sync_all marker that follows only worker 0
  }
  Tensor bad = test::failing_kernel({1});
  EXPECT_THROW(read<float>(bad), Error);  // poison reaches a marker the worker completes
  EXPECT_EQ(read<float>(eager::binary(add, x, one)), 501.0f);
  env::set_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", std::nullopt);
  if (vm::config().multi_thread) {
    EXPECT_GT(through_vm, 0) << "no read went through the VM: the test did not exercise the markers";
  }
}

// A marker that follows kernels of two VM threads stays on the scheduler; one that follows an async thread's
// kernels only goes to that thread's worker whatever RILL_VM_COMPUTE_ON_WORKER_THREAD says.
TEST(SyncRead, MarkersFollowingTwoThreads) {
  int tid = vm::reserve_thread_id();
  const OpSchema& add = eager::op("add");
  Tensor x = eager::full({4096}, Scalar(1.0), DType::kFloat32);
  for (int round = 0; round < 50; ++round) {
    Tensor a = eager::binary(add, x, x);  // thread 0
    vm::set_current_thread_id(tid);
    Tensor b = eager::binary(add, a, x);  // tid, after thread 0's a
    vm::set_current_thread_id(0);
    Tensor c = eager::binary(add, b, a);  // thread 0, after tid's b
    EXPECT_EQ(read<float>(eager::select(b, 0, 4095)), 3.0f);
    EXPECT_EQ(read<float>(eager::select(c, 0, round)), 5.0f);
    vm::set_current_thread_id(tid);
    Tensor d = eager::binary(add, x, x);
    vm::set_current_thread_id(0);
    vm::synchronize();  // follows thread 0 and tid
    EXPECT_EQ(read<float>(eager::select(d, 0, 7)), 2.0f);
  }
  vm::release_thread_id(tid);
}

TEST(AsyncThreads, IdsAreTheLowestFreeAndLimited) {
  env::set_override("RILL_VM_WORKER_THREAD_LIMIT", "4");
  int a = vm::reserve_thread_id(), b = vm::reserve_thread_id(), c = vm::reserve_thread_id();
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(c, 3);
  EXPECT_THROW(vm::reserve_thread_id(), Error);
  vm::release_thread_id(b);
  EXPECT_EQ(vm::reserve_thread_id(), 2);
  EXPECT_THROW(vm::set_current_thread_id(5), Error);  // not reserved
  for (int id : {1, 2, 3}) vm::release_thread_id(id);
  env::set_override("RILL_VM_WORKER_THREAD_LIMIT", std::nullopt);
}

TEST(AsyncThreads, DependencesCrossVmThreads) {
  int tid = vm::reserve_thread_id();
  Tensor x = eager::full({1000}, Scalar(1.0), DType::kFloat32);  // on thread 0
  const OpSchema& add = eager::op("add");
  vm::set_current_thread_id(tid);
  Tensor y = x;
  for (int i = 0; i < 100; ++i) y = eager::binary(add, y, x);  // on tid, reading thread 0's x
  vm::set_current_thread_id(0);
  eager::fill_(x, Scalar(5.0));  // thread 0 overwrites x after tid's reads
  EXPECT_EQ(read<float>(eager::select(y, 0, 999)), 101.0f);
  EXPECT_EQ(read<float>(eager::select(x, 0, 0)), 5.0f);
  vm::release_thread_id(tid);
}

}  // namespace
}  // namespace rill
