#include "rill/vm/virtual_machine.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "rill/vm/config.h"
#include "rill/vm/scheduler.h"

namespace rill::vm {
namespace {

std::atomic<uint64_t> g_submitted{0};
std::atomic<UnlockedRunner> g_unlocked_runner{nullptr};
std::mutex g_error_mutex;
std::shared_ptr<const Error> g_unreported_error;

// Leaked on purpose: VM threads run until the process ends, and tensors may be
// released during static destruction.
Scheduler& scheduler() {
  static Scheduler* s = new Scheduler();
  return *s;
}

void run_unlocked(void (*fn)(void*), void* ctx) {
  UnlockedRunner r = g_unlocked_runner.load(std::memory_order_acquire);
  if (r) {
    r(fn, ctx);
  } else {
    fn(ctx);
  }
}

[[noreturn]] void raise(const Error& e) { throw Error(e.kind(), e.what()); }

// Synchronous mode: finish what is in flight, then run on this thread.
void run_here(Instruction& instr) {
  if (scheduler().in_flight() > 0) synchronize();
  for (const Tensor& t : instr.inputs)
    if (t.storage()->poison()) raise(*t.storage()->poison());
  if (instr.kind == Instruction::Kind::kSync) {
    instr.signal->notify();
    return;
  }
  instr.run_or_throw();
}

}  // namespace

void submit(std::unique_ptr<Instruction> instr) {
  g_submitted.fetch_add(1, std::memory_order_relaxed);
  const Config& c = config();
  if (!c.multi_thread) {
    run_here(*instr);
    return;
  }
  Scheduler& s = scheduler();
  if (s.in_flight() >= c.max_in_flight) {
    // Back-pressure: let the VM catch up (to half the bound) before queueing more.
    int64_t target = c.max_in_flight / 2;
    run_unlocked([](void* ctx) { scheduler().wait_in_flight_below(*static_cast<int64_t*>(ctx)); }, &target);
  }
  s.submit(instr.release());
}

std::shared_ptr<SyncSignal> submit_sync(const std::vector<Tensor>& tensors, bool all) {
  auto instr = std::make_unique<Instruction>();
  instr->kind = Instruction::Kind::kSync;
  instr->inputs = tensors;
  instr->sync_all = all;
  instr->signal = std::make_shared<SyncSignal>();
  auto signal = instr->signal;
  submit(std::move(instr));
  return signal;
}

bool wait_for(SyncSignal& signal, std::chrono::microseconds timeout) {
  // Poll first (yielding) for up to the online time: most sync points follow the
  // work they wait for by microseconds, and a futex sleep/wake costs more.
  auto spin = std::min<std::chrono::microseconds>(timeout, std::chrono::microseconds(config().online_us));
  auto deadline = std::chrono::steady_clock::now() + spin;
  while (!signal.done.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::yield();
  }
  if (signal.done.load(std::memory_order_acquire)) return true;
  std::unique_lock<std::mutex> lock(signal.mutex);
  return signal.cv.wait_for(lock, timeout, [&] { return signal.done.load(std::memory_order_acquire); });
}

void check(const SyncSignal& signal) {
  if (!signal.error) return;
  {
    // Raised here, so synchronize() need not report it again.
    std::lock_guard<std::mutex> lock(g_error_mutex);
    if (g_unreported_error == signal.error) g_unreported_error.reset();
  }
  raise(*signal.error);
}

namespace {
// Waits with the caller's interpreter lock released: VM threads may need it (to
// release numpy buffers, or to name the Python line of a failed op).
void wait_unlocked(SyncSignal& signal) {
  if (signal.done.load(std::memory_order_acquire)) return;
  run_unlocked(
      [](void* ctx) {
        auto* s = static_cast<SyncSignal*>(ctx);
        while (!wait_for(*s, std::chrono::milliseconds(100))) {
        }
      },
      &signal);
}
}  // namespace

void synchronize() {
  if (scheduler().in_flight() > 0) wait_unlocked(*submit_sync({}, true));
  raise_unreported_error();
}

void wait_readable(const Tensor& t) {
  auto signal = submit_sync({t}, false);
  wait_unlocked(*signal);
  check(*signal);
}

void record_error(const std::shared_ptr<const Error>& error) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  if (!g_unreported_error) g_unreported_error = error;
}

void raise_unreported_error() {
  std::shared_ptr<const Error> e;
  {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    e.swap(g_unreported_error);
  }
  if (e) raise(*e);
}

void set_unlocked_runner(UnlockedRunner runner) { g_unlocked_runner.store(runner, std::memory_order_release); }

uint64_t num_submitted() { return g_submitted.load(std::memory_order_relaxed); }

int64_t num_in_flight() { return scheduler().in_flight(); }

}  // namespace rill::vm
