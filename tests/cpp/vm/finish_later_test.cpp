// vm/: kernels that finish later (Note [Kernels that finish later] in vm/worker.cpp): the worker goes on
// with independent instructions, keeps program order for ones that touch the same memory, and a failure of
// the late work poisons what the instruction writes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "rill/eager/functional.h"
#include "rill/vm/virtual_machine.h"

namespace rill {
namespace {

std::atomic<bool> g_release{false};   // the late work is done once this is set
std::atomic<bool> g_fail{false};      // ... and then fails
std::atomic<bool> g_late_done{false}; // set when the late work completed
std::atomic<int> g_later_saw{-1};     // what a later kernel on the same memory saw of g_late_done

class Gate final : public vm::PendingWork {
 public:
  explicit Gate(float* out) : out_(out) {}
  bool poll() override {
    if (!g_release.load()) return false;
    if (g_fail.load()) RILL_FAIL(Runtime, "the late work failed");
    *out_ = 7.0f;
    g_late_done.store(true);
    return true;
  }

 private:
  float* out_;
};

void late_kernel(const KernelContext& ctx) { vm::finish_later(std::make_unique<Gate>(ctx.outputs[0].ptr<float>())); }

void plain_kernel(const KernelContext& ctx) { *ctx.outputs[0].ptr<float>() = 3.0f; }

void after_kernel(const KernelContext& ctx) {
  g_later_saw.store(g_late_done.load() ? 1 : 0);
  *ctx.outputs[0].ptr<float>() += 1.0f;
}

void submit(KernelFn kernel, const Tensor& out, int tid) {
  auto instr = vm::new_instruction();
  instr->op = &eager::op("neg");
  instr->kernel = kernel;
  instr->outputs = {out};
  instr->stream.thread_id = static_cast<int16_t>(tid);
  vm::submit(std::move(instr));
}

float value(const Tensor& t) {
  vm::wait_readable(t);
  return *static_cast<const float*>(t.data_ptr());
}

void reset() {
  g_release = false;
  g_fail = false;
  g_late_done = false;
  g_later_saw = -1;
}

TEST(FinishLater, TheWorkerGoesOnWithIndependentInstructions) {
  reset();
  int tid = vm::reserve_thread_id();
  Tensor x = eager::empty({1}, DType::kFloat32), y = eager::empty({1}, DType::kFloat32);
  submit(late_kernel, x, tid);
  submit(plain_kernel, y, tid);
  EXPECT_EQ(value(y), 3.0f);  // done while x's work is still going on
  EXPECT_FALSE(g_late_done.load());
  g_release = true;
  EXPECT_EQ(value(x), 7.0f);
  vm::release_thread_id(tid);
}

TEST(FinishLater, AnInstructionOnTheSameMemoryWaitsForIt) {
  reset();
  int tid = vm::reserve_thread_id();
  Tensor x = eager::empty({1}, DType::kFloat32);
  submit(late_kernel, x, tid);
  submit(after_kernel, x, tid);  // same thread, same memory: no edge, program order kept by the worker
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(g_later_saw.load(), -1);  // still waiting
  g_release = true;
  EXPECT_EQ(value(x), 8.0f);
  EXPECT_EQ(g_later_saw.load(), 1);
  vm::release_thread_id(tid);
}

TEST(FinishLater, ReadersOnOtherThreadsWaitForTheLateWork) {
  reset();
  int tid = vm::reserve_thread_id();
  Tensor x = eager::empty({1}, DType::kFloat32);
  submit(late_kernel, x, tid);
  Tensor y = eager::binary(eager::op("add"), x, x);  // thread 0: an edge to the late instruction
  std::thread release([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    g_release = true;
  });
  EXPECT_EQ(value(y), 14.0f);
  release.join();
  vm::release_thread_id(tid);
}

TEST(FinishLater, AFailureOfTheLateWorkPoisonsTheOutputs) {
  reset();
  int tid = vm::reserve_thread_id();
  Tensor x = eager::empty({1}, DType::kFloat32);
  g_fail = true;
  g_release = true;
  submit(late_kernel, x, tid);
  try {
    value(x);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the late work failed"), std::string::npos) << e.what();
  }
  try {
    vm::raise_unreported_error();  // the error was recorded for the next sync point too: take it
  } catch (const Error&) {
  }
  vm::release_thread_id(tid);
}

}  // namespace
}  // namespace rill
