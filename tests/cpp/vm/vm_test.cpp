// vm/: dependences across VM threads, many clients, poisoning, sync markers.
// Also built with ThreadSanitizer by scripts/tsan.sh.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/vm/virtual_machine.h"

namespace rill {
namespace {

// Issue op on VM thread tid (bypassing eager, which always uses the caller's thread id).
Tensor issue(const char* name, std::vector<Tensor> inputs, int tid, std::vector<Scalar> scalars = {},
             AttrsSym attrs = empty_attrs()) {
  const OpSchema& op = eager::op(name);
  std::vector<MetaSym> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  const InferResult& r = ops::infer_cached(op, metas, scalars, attrs);
  Tensor out = Tensor::empty(r.outputs[0]);
  auto instr = std::make_unique<vm::Instruction>();
  instr->op = &op;
  instr->kernel = op.kernel(DeviceType::kCPU);
  instr->stream.thread_id = static_cast<int16_t>(tid);
  instr->inputs = std::move(inputs);
  instr->outputs = {out};
  instr->attrs = attrs;
  instr->scalars = std::move(scalars);
  vm::submit(std::move(instr));
  return out;
}

float first(const Tensor& t) {
  vm::wait_readable(t);
  return *static_cast<const float*>(t.data_ptr());
}

TEST(VM, DependencesAcrossThreadsKeepProgramOrder) {
  Tensor x = eager::full({256}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({256}, Scalar(1.0), DType::kFloat32);
  // Each step reads the previous result on another VM thread.
  for (int i = 0; i < 200; ++i) x = issue("add", {x, one}, i % 4);
  EXPECT_EQ(first(x), 200.0f);
}

TEST(VM, InPlaceWritesWaitForEarlierReaders) {
  Tensor x = eager::full({1024}, Scalar(1.0), DType::kFloat32);
  std::vector<Tensor> reads;
  for (int i = 0; i < 50; ++i) {
    reads.push_back(issue("mul_scalar", {x}, 1 + i % 3, {Scalar(2.0)}));  // reads x on threads 1..3
    eager::fill_(x, Scalar(static_cast<double>(i + 2)));                  // overwrites x on thread 0
  }
  for (int i = 0; i < 50; ++i) EXPECT_EQ(first(reads[i]), 2.0f * static_cast<float>(i + 1)) << i;
}

TEST(VM, ManyClientThreads) {
  constexpr int kClients = 4;
  Tensor shared = eager::full({64}, Scalar(3.0), DType::kFloat32);
  std::vector<float> got(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Tensor x = eager::full({64}, Scalar(static_cast<double>(c)), DType::kFloat32);
      for (int i = 0; i < 500; ++i) x = eager::binary(eager::op("add"), x, shared);
      got[c] = first(x);
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(got[c], static_cast<float>(c) + 1500.0f);
}

TEST(VM, ErrorsPoisonDependentsOnly) {
  // mvlgamma(x, p) needs every x > (p - 1) / 2: found while the kernel runs
  Tensor base = eager::full({4}, Scalar(2.0), DType::kFloat32);
  Tensor small = eager::full({4}, Scalar(0.1), DType::kFloat32);
  Tensor bad = issue("mvlgamma", {small}, 2, {}, make_attrs({int64_t{3}}));
  Tensor later = issue("add", {bad, base}, 1);
  Tensor fine = issue("add", {base, base}, 3);
  EXPECT_EQ(first(fine), 4.0f);
  try {
    vm::wait_readable(later);
    FAIL() << "expected the poisoned tensor to raise";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("must be greater than"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'mvlgamma'"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(vm::synchronize());  // already reported through `later`
}

TEST(VM, SynchronizeWaitsForEveryThread) {
  Tensor one = eager::full({4096}, Scalar(1.0), DType::kFloat32);
  std::vector<Tensor> outs;
  for (int i = 0; i < 64; ++i) outs.push_back(issue("exp", {one}, i % 4));
  vm::synchronize();
  // Every earlier instruction has run; only bookkeeping (the sync marker's own retirement) may lag.
  for (const Tensor& t : outs) {
    ASSERT_TRUE(t.storage()->allocated());
    EXPECT_FLOAT_EQ(*static_cast<const float*>(t.data_ptr()), 2.7182817f);
  }
  for (int i = 0; i < 2000 && vm::num_in_flight() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(vm::num_in_flight(), 0);
}

}  // namespace
}  // namespace rill
