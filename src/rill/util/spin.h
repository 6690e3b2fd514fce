// Spinning that stops when it does not pay: one turn of an online spin (Note [Staying online] in
// vm/scheduler.cpp) that tells its caller whether a core was free.
#pragma once

#include <chrono>
#include <thread>

namespace rill {

/** A yield that took longer than this gave the core to another thread: no core is free. */
inline constexpr auto kSlowYield = std::chrono::microseconds(50);

// Note [Spinning on a busy machine]
// An idle VM or intra-op thread polls, yielding the CPU, so the next op does not pay a futex wake. That
// is worth it only while a core is free: then a yield returns within a microsecond or two (nothing else
// wants the core, or another poller yields it straight back). When CPU-bound threads or processes share
// the cores, a yield hands the core to one of them for a time slice (milliseconds), and each turn of the
// spin takes a slice from them, the client thread that will submit the next op included. So each turn
// times its yield, and a yield slower than kSlowYield ends the spin: the thread blocks, and the next op
// pays one wake-up instead of the spinner's slices.
/** One turn of an online spin: yield the CPU; false when the yield was slow (Note [Spinning on a busy machine]). */
inline bool spin_yield() {
  auto before = std::chrono::steady_clock::now();
  std::this_thread::yield();
  return std::chrono::steady_clock::now() - before < kSlowYield;
}

/** A short busy-wait hint to the CPU (a pause on x86-64): polls without giving the core away. */
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace rill
