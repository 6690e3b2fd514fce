// vm/: fork() while the VM is busy (Note [Fork]): a thread that never used rill forks
// without waiting, and the child computes with a fresh VM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "rill/eager/functional.h"
#include "rill/util/env.h"
#include "rill/vm/virtual_machine.h"

namespace rill {
namespace {

float value_at(const Tensor& t, int64_t i) {
  Tensor e = eager::select(eager::reshape(t, {t.numel()}), 0, i);
  vm::wait_readable(e);
  return *static_cast<const float*>(e.data_ptr());
}

// What a child does: elementwise ops and a matmul on fresh tensors; exit code 0 if right.
[[noreturn]] void child_computes() {
  int code = 0;
  try {
    Tensor a = eager::full({64, 64}, Scalar(1.0), DType::kFloat32);
    Tensor b = eager::binary(eager::op("add"), a, a);
    Tensor c = eager::matmul(b, a);
    if (value_at(b, 5) != 2.0f) code = 1;
    if (value_at(c, 77) != 128.0f) code = 2;
  } catch (...) {
    code = 3;
  }
  _exit(code);
}

// Exit status of pid, or -1 if it did not finish within timeout (it is then killed).
int wait_with_timeout(pid_t pid, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(Fork, NativeThreadForksWhileTheVmIsBusy) {
  std::atomic<bool> stop{false};
  std::vector<int> codes;
  std::thread forker([&] {  // never submits anything: must not wait for the VM
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      pid_t pid = ::fork();
      if (pid == 0) child_computes();
      codes.push_back(wait_with_timeout(pid, std::chrono::seconds(30)));
    }
    stop = true;
  });
  // This thread keeps the VM busy with elementwise work and matmuls meanwhile.
  Tensor x = eager::full({128, 128}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({128, 128}, Scalar(1.0), DType::kFloat32);
  int64_t steps = 0;
  while (!stop) {
    for (int i = 0; i < 20; ++i, ++steps) x = eager::binary(eager::op("add"), x, one);
    Tensor m = eager::matmul(one, one);
    vm::drain();
  }
  forker.join();
  EXPECT_EQ(value_at(x, 0), static_cast<float>(steps));
  for (size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(codes[i], 0) << "child " << i;
}

TEST(Fork, ValueStillBeingWrittenIsUnusableInTheChild) {
  // The matmul must run on the scheduler thread while this one forks, not on this thread at its submission, as
  // it would while the scheduler, finding no core free (busy threads of an earlier test, a loaded machine),
  // leaves its work to the clients (Note [Waiting for a core] in vm/scheduler.cpp).
  struct KnobOff {
    KnobOff() { env::set_override("RILL_VM_WAITER_RUNS_QUEUED", "0"); }
    ~KnobOff() { env::set_override("RILL_VM_WAITER_RUNS_QUEUED", std::nullopt); }
  } knob_off;
  Tensor a = eager::full({1024, 1024}, Scalar(1.0), DType::kFloat32);
  vm::synchronize();
  int raised = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    Tensor c = eager::matmul(a, a);  // tens of milliseconds of work
    int code = -2;
    std::thread forker([&] {
      bool pending = c.storage()->writes_in_flight().load() > 0;
      pid_t pid = ::fork();
      if (pid == 0) {
        // Pending at the fork: using c raises; else it holds the finished value.
        bool lost = c.storage()->writes_in_flight().load() > 0;
        try {
          float v = value_at(c, 3);
          _exit(!lost && v == 1024.0f ? 4 : 1);
        } catch (const Error& e) {
          _exit(lost && std::string(e.what()).find("[fork]") != std::string::npos ? 0 : 2);
        }
      }
      code = wait_with_timeout(pid, std::chrono::seconds(30));
      (void)pending;
    });
    forker.join();
    ASSERT_TRUE(code == 0 || code == 4) << "child exit code " << code;
    raised += code == 0;
    EXPECT_EQ(value_at(c, 3), 1024.0f);  // the parent is unaffected
  }
  EXPECT_GT(raised, 0) << "the fork never happened while the matmul ran";
}

TEST(Fork, ForkingThreadThatSubmittedDrainsFirst) {
  Tensor y = eager::full({1}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({1}, Scalar(1.0), DType::kFloat32);
  for (int i = 0; i < 2000; ++i) eager::copy_(y, eager::binary(eager::op("add"), y, one));
  pid_t pid = ::fork();  // this thread submitted: the VM drains before the fork
  if (pid == 0) {
    int code = 0;
    try {
      if (value_at(y, 0) != 2000.0f) code = 1;
      eager::copy_(y, eager::binary(eager::op("add"), y, one));
      if (value_at(y, 0) != 2001.0f) code = 2;  // the parent's queue is not replayed
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  EXPECT_EQ(wait_with_timeout(pid, std::chrono::seconds(30)), 0);
  EXPECT_EQ(value_at(y, 0), 2000.0f);
}

}  // namespace
}  // namespace rill
