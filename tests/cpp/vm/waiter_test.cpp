// vm/: a client waiting at a sync point runs the queued batch in the scheduler's place, and the queue of the
// worker it submits to in the worker's place (Note [A waiter runs the queue] in vm/scheduler.cpp): order,
// dependences across VM threads and poisoning hold whoever runs a batch; a pinned stream's kernels run only on
// its worker; the comm stream's completions are retired by a polling client. Also built with ThreadSanitizer by
// scripts/tsan.sh.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/env.h"
#include "rill/vm/virtual_machine.h"
#include "../values.h"

namespace rill {
namespace {

thread_local bool t_client = false;       // set on the test's client threads
std::atomic<int> g_ran_on_client{0};      // probe kernels that ran on a client thread
std::atomic<int> g_ran{0};                // probe kernels that ran at all

// Adds 1 to its one output (read and written in place), counting where it ran.
void probe_kernel(const KernelContext& ctx) {
  *ctx.outputs[0].ptr<float>() += 1.0f;
  g_ran.fetch_add(1);
  if (t_client) g_ran_on_client.fetch_add(1);
}

// Busy for 20 us, then writes 1 to its output: what follows it on another VM thread is dispatched late, so the
// worker that runs it is asleep when the waiter retires this one and finds it queued.
void slow_one_kernel(const KernelContext& ctx) {
  int64_t until = vm::now_ns() + 20'000;
  while (vm::now_ns() < until) {
  }
  *ctx.outputs[0].ptr<float>() = 1.0f;
}

void submit_kernel(KernelFn kernel, const Tensor& out, std::vector<Tensor> inputs, int thread_id,
                   vm::StreamRole role = vm::StreamRole::kCompute) {
  auto instr = vm::new_instruction();
  instr->op = &eager::op("neg");
  instr->kernel = kernel;
  instr->inputs = std::move(inputs);
  instr->outputs = {out};
  instr->stream.thread_id = static_cast<int16_t>(thread_id);
  instr->stream.role = role;
  vm::submit(std::move(instr));
}

// out += 1 on thread_id's stream, after a slow kernel on slow_id's worker that it reads.
void submit_probe(const Tensor& out, int thread_id, vm::StreamRole role, int slow_id, const Tensor& gate) {
  submit_kernel(slow_one_kernel, gate, {}, slow_id);
  submit_kernel(probe_kernel, out, {gate}, thread_id, role);
}

// The tests of a worker's queue: waiters poll (they block at once with no online time), and so do the VM threads.
void waiters_poll() { env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", "5000"); }

// Iterations of a takeover test: at least kMinIters, and on until the path was taken (how soon depends on how the
// OS schedules the threads), at most kMaxIters.
constexpr int kMinIters = 100, kMaxIters = 5000;

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
          Tensor bad = test::failing_kernel({4});
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

// Note [Waiting for a core] in vm/scheduler.cpp: with the default knob and every core taken (the fixture's busy
// threads and as many more), the scheduler finds itself waiting for a core and leaves the work to the client,
// which then runs its batches itself; the values stay right. With the knob at 0 it never leaves it.
TEST_F(VMWaiter, SchedulerLeavesWorkToClientsWithNoCoreFree) {
  if (access("/proc/thread-self/schedstat", R_OK) != 0) GTEST_SKIP() << "no per-thread schedstat here";
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", std::nullopt);
  env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", std::nullopt);
  std::atomic<bool> stop{false};
  std::vector<std::thread> more;
  for (unsigned k = 0; k < std::max(1u, std::thread::hardware_concurrency()); ++k)
    more.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  uint64_t before = vm::num_scheduler_deferrals();
  Tensor x = eager::full({4096}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({4096}, Scalar(1.0), DType::kFloat32);
  int wrong = 0, i = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (vm::num_scheduler_deferrals() == before && std::chrono::steady_clock::now() < until) {
    for (int k = 0; k < 50; ++k) x = eager::binary(eager::op("add"), x, one);  // the scheduler's work
    i += 50;
    if (read_float(eager::select(x, 0, 7)) != static_cast<float>(i)) ++wrong;
  }
  for (int k = 0; k < 200; ++k) {  // and on, now that clients run the batches
    x = eager::binary(eager::op("add"), x, one);
    if (read_float(eager::select(x, 0, 7)) != static_cast<float>(++i)) ++wrong;
  }
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "0");
  vm::synchronize();
  uint64_t off = vm::num_scheduler_deferrals();
  for (int k = 0; k < 200; ++k) {
    x = eager::binary(eager::op("add"), x, one);
    if (read_float(eager::select(x, 0, 7)) != static_cast<float>(++i)) ++wrong;
  }
  uint64_t after_off = vm::num_scheduler_deferrals();
  stop.store(true);
  for (auto& t : more) t.join();
  EXPECT_GT(off, before) << "the scheduler never left its work to the client on a machine with no core free";
  EXPECT_EQ(after_off, off) << "the scheduler left its work to the client with RILL_VM_WAITER_RUNS_QUEUED=0";
  EXPECT_EQ(wrong, 0) << "a read saw a value out of order";
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

// The client's kernels go to an async thread's worker, which sleeps after every batch: waiters take its queue
// (and the scheduler's), the worker takes what it reaches first. A chain on one stream has no edges (stream order
// replaces them), so a batch run out of order, or two at once, reads a stale value.
TEST_F(VMWaiter, RunsAWorkersQueueInOrder) {
  waiters_poll();
  uint64_t before = vm::num_waiter_worker_batches();
  int tid = vm::reserve_thread_id(), slow_id = vm::reserve_thread_id();
  vm::set_current_thread_id(tid);
  Tensor x = eager::full({64}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({64}, Scalar(1.0), DType::kFloat32);
  int wrong = 0;
  float expected = 0.0f;
  for (int i = 1; i <= kMinIters || (i <= kMaxIters && vm::num_waiter_worker_batches() == before); ++i) {
    submit_kernel(slow_one_kernel, one, {}, slow_id);  // one[0] = 1 again, on another worker, slowly
    x = eager::binary(eager::op("add"), x, one);
    if (i % 3 == 0) continue;  // sometimes two batches before the read
    if (read_float(eager::select(x, 0, 0)) != static_cast<float>(i)) ++wrong;
    expected = static_cast<float>(i);
  }
  vm::synchronize();
  vm::set_current_thread_id(0);
  vm::release_thread_id(slow_id);
  vm::release_thread_id(tid);
  EXPECT_GT(expected, 0.0f);
  EXPECT_EQ(wrong, 0) << "a read saw the chain out of order";
  EXPECT_GT(vm::num_waiter_worker_batches(), before) << "no waiter ran the worker's queue: the path went untested";
}

// A kernel error in a batch a waiter ran poisons its dependents, raises at the sync point that reads them, and
// otherwise at the next synchronize().
TEST_F(VMWaiter, ErrorsOfATakenOverQueueReachTheNextSyncPoint) {
  waiters_poll();
  int tid = vm::reserve_thread_id();
  vm::set_current_thread_id(tid);
  Tensor base = eager::full({4}, Scalar(int64_t{2}), DType::kInt64);
  int unraised = 0, unreported = 0, wrong = 0;
  for (int i = 0; i < 50; ++i) {
    Tensor later = eager::binary(eager::op("add"), test::failing_kernel({4}), base);
    try {
      vm::wait_readable(later);
      ++unraised;
    } catch (const Error&) {
    }
    test::failing_kernel({4});  // read by nobody: reported by synchronize()
    Tensor fine = eager::binary(eager::op("add"), base, base);
    if (read_float(eager::to_dtype(fine, DType::kFloat32)) != 4.0f) ++wrong;  // touches no poison: no error
    try {
      vm::synchronize();
      ++unreported;
    } catch (const Error&) {
    }
  }
  vm::set_current_thread_id(0);
  vm::release_thread_id(tid);
  EXPECT_EQ(unraised, 0) << "a poisoned tensor was read without an error";
  EXPECT_EQ(unreported, 0) << "synchronize() missed a kernel error";
  EXPECT_EQ(wrong, 0);
}

// Two client threads on one VM thread id wait on its worker's queue while the worker wakes for it: each chain stays
// in order and the in-place counter they share counts every increment once.
TEST_F(VMWaiter, TwoWaitersAndTheWorkerRaceForOneQueue) {
  waiters_poll();
  int tid = vm::reserve_thread_id(), slow_id = vm::reserve_thread_id();
  Tensor counter = eager::full({1}, Scalar(0.0), DType::kFloat32);
  g_ran = 0;
  g_ran_on_client = 0;
  constexpr int kClients = 2;
  std::atomic<int> issued{0};
  std::vector<int> wrong(kClients, 0);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      t_client = true;
      vm::set_current_thread_id(tid);
      Tensor x = eager::full({16}, Scalar(0.0), DType::kFloat32);
      Tensor one = eager::full({16}, Scalar(1.0), DType::kFloat32);
      Tensor gate = eager::full({1}, Scalar(1.0), DType::kFloat32);
      for (int i = 1; i <= kMinIters || (i <= kMaxIters && g_ran_on_client.load() == 0); ++i) {
        issued.fetch_add(1);
        x = eager::binary(eager::op("add"), x, one);
        submit_probe(counter, tid, vm::StreamRole::kCompute, slow_id, gate);
        if (read_float(eager::select(x, 0, 15)) != static_cast<float>(i)) ++wrong[c];
      }
      vm::set_current_thread_id(0);
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(read_float(counter), static_cast<float>(issued.load()));
  vm::release_thread_id(slow_id);
  vm::release_thread_id(tid);
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(wrong[c], 0) << "client " << c << " read its chain out of order";
  EXPECT_EQ(g_ran.load(), issued.load());
  EXPECT_GT(g_ran_on_client.load(), 0) << "no waiter ran the worker's queue: the path went untested";
}

// The thread id of the tests' comm stream: reserved once and kept, as the comm stream's is (a worker that ran a
// pinned stream's instruction stays pinned, so the id must not go to a later test's rill.asyncs thread).
int comm_thread_id() {
  static const int tid = vm::reserve_thread_id();
  return tid;
}

// A pinned stream's kernels (the comm stream's MPI calls) run on its worker only, however the client waits; the
// same kernels on an unpinned stream are taken over, so the check can fail.
TEST_F(VMWaiter, PinnedStreamsAreNeverTakenOver) {
  waiters_poll();
  t_client = true;
  int slow_id = vm::reserve_thread_id();
  Tensor gate = eager::full({1}, Scalar(1.0), DType::kFloat32);
  int taken_after = 0;  // iterations the unpinned stream needed: the pinned one gets as many chances
  for (auto role : {vm::StreamRole::kCompute, vm::StreamRole::kComm}) {
    int tid = role == vm::StreamRole::kComm ? comm_thread_id() : vm::reserve_thread_id();
    vm::set_current_thread_id(tid);
    Tensor out = eager::full({1}, Scalar(0.0), DType::kFloat32);
    vm::wait_readable(out);
    g_ran_on_client = 0;
    for (int i = 1; i <= kMinIters || (role == vm::StreamRole::kComm ? i <= taken_after
                                                                        : i <= kMaxIters && g_ran_on_client == 0);
         ++i) {
      if (role == vm::StreamRole::kCompute) taken_after = i;
      submit_probe(out, tid, role, slow_id, gate);
      EXPECT_EQ(read_float(out), static_cast<float>(i));
    }
    vm::set_current_thread_id(0);
    if (role == vm::StreamRole::kComm) {
      EXPECT_EQ(g_ran_on_client.load(), 0) << "a waiter ran a pinned stream's kernel";
    } else {
      EXPECT_GT(g_ran_on_client.load(), 0) << "no waiter ran an unpinned stream's kernel: the check cannot fail";
      vm::release_thread_id(tid);
    }
  }
  vm::release_thread_id(slow_id);
  t_client = false;
}

// Adds 1 to its one output, read and written in place.
void add_one_kernel(const KernelContext& ctx) { *ctx.outputs[0].ptr<float>() += 1.0f; }

// Sleeps 5 ms, then adds 1: the client and the scheduler thread are long done with it when it finishes.
void slow_add_one_kernel(const KernelContext& ctx) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  add_one_kernel(ctx);
}

void submit_on_comm_stream(KernelFn kernel, const Tensor& out, int thread_id) {
  auto instr = vm::new_instruction();
  instr->op = &eager::op("neg");
  instr->kernel = kernel;
  instr->inputs = {out};
  instr->outputs = {out};
  instr->stream.thread_id = static_cast<int16_t>(thread_id);
  instr->stream.role = vm::StreamRole::kComm;
  vm::submit(std::move(instr));
}

// The comm stream's round trip leaves the scheduler thread out (Note [The comm stream's hand-offs] in
// vm/scheduler.cpp): a polling client retires what the comm thread finishes, the scheduler's deadline retires what
// nobody waits for, and a blocked client is still woken. Kernels of a pinned stream stand in for MPI calls.
class VMCommHandOff : public ::testing::Test {
 protected:
  void SetUp() override {
    tid_ = comm_thread_id();
    x_ = eager::full({1}, Scalar(0.0), DType::kFloat32);
    vm::wait_readable(x_);
  }
  void TearDown() override {
    env::set_override("RILL_VM_WAITER_RUNS_QUEUED", std::nullopt);
    env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", std::nullopt);
  }
  // One round trip: kernel on x_ on the comm stream, then x_ read.
  float round_trip(KernelFn kernel) {
    submit_on_comm_stream(kernel, x_, tid_);
    return read_float(x_);
  }
  int tid_ = -1;
  Tensor x_;  // the value the collectives add to
};

// Round trips (a collective, then its result read) until one completion was left to the polling client: each reads
// the right value, and the scheduler thread was not needed for it.
TEST_F(VMCommHandOff, APollingClientRetiresWhatTheCommThreadFinishes) {
  uint64_t before = vm::num_comm_completions_left();
  int i = 0;
  while (++i <= 100 || (vm::num_comm_completions_left() == before && i <= 20000))
    ASSERT_EQ(round_trip(add_one_kernel), static_cast<float>(i));
  EXPECT_GT(vm::num_comm_completions_left(), before) << "every completion woke the scheduler thread";
  vm::synchronize();
  EXPECT_EQ(vm::num_in_flight(), 0);
}

// With RILL_VM_WAITER_RUNS_QUEUED=0 the scheduler thread does it all: no completion is left.
TEST_F(VMCommHandOff, OffWhenWaitersLeaveEverythingToTheScheduler) {
  env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "0");
  uint64_t before = vm::num_comm_completions_left();
  for (int i = 1; i <= 200; ++i) ASSERT_EQ(round_trip(add_one_kernel), static_cast<float>(i));
  EXPECT_EQ(vm::num_comm_completions_left(), before);
}

// A completion that no client waits for, left unannounced while the scheduler sleeps with its deadline, is
// retired without any client doing anything. (The scheduler may happen to be awake when one finishes: then it is
// announced; so on until one was left.)
TEST_F(VMCommHandOff, WhatNobodyWaitsForIsRetiredAtTheDeadline) {
  submit_on_comm_stream(add_one_kernel, x_, tid_);  // the comm stream in use: the scheduler sleeps with a deadline
  vm::synchronize();
  uint64_t before = vm::num_comm_completions_left();
  int added = 1;
  for (int i = 0; i < 20 && vm::num_comm_completions_left() == before; ++i) {
    submit_on_comm_stream(slow_add_one_kernel, x_, tid_);
    ++added;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (vm::num_in_flight() > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(vm::num_in_flight(), 0) << "a finished collective nobody waited for was never retired";
  }
  EXPECT_GT(vm::num_comm_completions_left(), before) << "every completion woke the scheduler: the path went untested";
  EXPECT_EQ(read_float(x_), static_cast<float>(added));
}

// A client blocked at a sync point (no online time: it blocks at once) is woken by the completion: it is not left.
TEST_F(VMCommHandOff, ABlockedClientIsWoken) {
  env::set_override("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", "0");
  uint64_t before = vm::num_comm_completions_left();
  for (int i = 1; i <= 20; ++i) ASSERT_EQ(round_trip(slow_add_one_kernel), static_cast<float>(i));
  // Each client blocks microseconds after its submission, 5 ms before the completion; a client the OS held off the
  // core for those 5 ms still polled when it came (then it is left): allow two such.
  EXPECT_LE(vm::num_comm_completions_left() - before, 2u) << "completions a blocked client waited for were left";
}

}  // namespace
}  // namespace rill
