// vm/park: stopping and restarting VM threads (rill.odb), and the trace recorder.
// Also built with ThreadSanitizer by scripts/tsan.sh.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "rill/eager/functional.h"
#include "rill/util/env.h"
#include "rill/vm/park.h"
#include "rill/vm/trace.h"
#include "rill/vm/virtual_machine.h"

namespace rill {
namespace {

float first(const Tensor& t) {
  vm::wait_readable(t);
  return *static_cast<const float*>(t.data_ptr());
}

// Issue op on VM thread tid (eager always uses the caller's thread id).
Tensor issue_on(const char* name, std::vector<Tensor> inputs, int tid, std::vector<Scalar> scalars = {}) {
  const OpSchema& op = eager::op(name);
  std::vector<MetaSym> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  const InferResult& r = ops::infer_cached(op, metas, scalars, empty_attrs());
  Tensor out = Tensor::empty(r.outputs[0]);
  auto instr = std::make_unique<vm::Instruction>();
  instr->op = &op;
  instr->kernel = op.kernel(DeviceType::kCPU);
  instr->stream.thread_id = static_cast<int16_t>(tid);
  instr->inputs = std::move(inputs);
  instr->outputs = {out};
  instr->attrs = empty_attrs();
  instr->scalars = std::move(scalars);
  vm::submit(std::move(instr));
  return out;
}

TEST(VM, StoppedSchedulerQueuesUntilRestart) {
  Tensor x = eager::full({64}, Scalar(1.0), DType::kFloat32);
  vm::synchronize();
  vm::stop_scheduler();
  EXPECT_TRUE(vm::scheduler_stopped());
  Tensor y = x;
  for (int i = 0; i < 20; ++i) y = eager::binary(eager::op("add"), y, x);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(vm::num_in_flight(), 20) << "a stopped scheduler must not run what is submitted";
  EXPECT_EQ(y.storage()->writes_in_flight().load(), 1);
  EXPECT_THROW(vm::synchronize(), Error);  // would wait forever: raises instead
  vm::restart_scheduler();
  EXPECT_FALSE(vm::scheduler_stopped());
  EXPECT_EQ(first(y), 21.0f);
  vm::synchronize();
  EXPECT_EQ(vm::num_in_flight(), 0);
}

TEST(VM, StoppedWorkerQueuesUntilRestart) {
  int tid = vm::reserve_thread_id();
  Tensor x = eager::full({64}, Scalar(2.0), DType::kFloat32);
  vm::synchronize();
  vm::stop_worker(tid);
  EXPECT_TRUE(vm::stopped_threads().workers[tid]);
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = issue_on("mul_scalar", {y}, tid, {Scalar(2.0)});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(y.storage()->writes_in_flight().load(), 1) << "a stopped worker must not run its queue";
  vm::restart_worker(tid);
  EXPECT_EQ(first(y), 2048.0f);
  vm::synchronize();
  vm::release_thread_id(tid);
}

TEST(VM, StopAndRestartManyTimesWhileClientsSubmit) {
  Tensor one = eager::full({16}, Scalar(1.0), DType::kFloat32);
  Tensor x = eager::full({16}, Scalar(0.0), DType::kFloat32);
  std::atomic<bool> done{false};
  std::thread toggler([&] {
    while (!done.load()) {
      vm::stop_scheduler();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      vm::restart_scheduler();
      std::this_thread::yield();
    }
  });
  for (int i = 0; i < 2000; ++i) x = eager::binary(eager::op("add"), x, one);
  done.store(true);
  toggler.join();
  vm::restart_scheduler();
  EXPECT_EQ(first(x), 2000.0f);
}

TEST(VM, StopWorkerZeroNeedsComputeOnWorker) {
  env::set_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", "0");
  EXPECT_THROW(vm::stop_worker(0), Error);
  EXPECT_THROW(vm::stop_worker(vm::kMaxThreadIds), Error);
  env::set_override("RILL_VM_COMPUTE_ON_WORKER_THREAD", std::nullopt);
}

TEST(VM, TraceRecordsEveryInstructionInOrder) {
  std::string path = ::testing::TempDir() + "rill_vm_trace_test.json";
  Tensor one = eager::full({8}, Scalar(1.0), DType::kFloat32);
  vm::synchronize();
  vm::trace::start(path);
  EXPECT_THROW(vm::trace::start(path), Error);  // traces do not nest
  Tensor x = one;
  for (int i = 0; i < 5; ++i) x = eager::binary(eager::op("add"), x, one);
  vm::synchronize();
  EXPECT_GE(vm::trace::stop(), 5);  // the adds, and the synchronize marker if they were still running
  std::ifstream f(path);
  std::stringstream buffer;
  buffer << f.rdbuf();
  const std::string text = buffer.str();
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  for (const char* cat : {"submit", "dispatch", "run"})
    EXPECT_EQ(count("{\"name\": \"add\", \"cat\": \"" + std::string(cat) + "\""), 5u) << cat;
  std::remove(path.c_str());
}

// A reused SyncRead traced once must not keep recording after the trace stops.
TEST(VM, NothingIsBufferedBetweenTraces) {
  std::string path = ::testing::TempDir() + "rill_vm_trace_reads.json";
  Tensor one = eager::full({1}, Scalar(1.0), DType::kFloat32);
  vm::synchronize();
  auto read_queued = [&](const Tensor& t) -> float {  // the read goes through the VM: its producer is queued
    vm::stop_scheduler();
    Tensor x = eager::binary(eager::op("add"), t, one);
    alignas(16) char value[16];
    vm::SyncSignal* signal = vm::submit_read(x, value);
    vm::restart_scheduler();
    EXPECT_NE(signal, nullptr);
    if (!signal) return -1.0f;
    while (!vm::wait_for(*signal, std::chrono::seconds(1))) {
    }
    vm::finish_read(value);
    return *reinterpret_cast<float*>(value);
  };
  vm::trace::start(path);
  EXPECT_EQ(read_queued(one), 2.0f);
  EXPECT_GE(vm::trace::stop(), 2);
  EXPECT_EQ(read_queued(one), 2.0f);
  EXPECT_EQ(vm::trace::buffered(), 0u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rill
