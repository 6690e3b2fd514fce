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

// Note [Waiting for a core]
// A slow yield sees only the threads that compete with the spinner inside its own scheduling group. With
// the kernel's autogroups (a process started from another terminal or session, or with setsid, is its own
// group) a yield returns at once even when every core is taken: it yields only to the spinner's siblings,
// and the whole group, rill's client thread included, then waits for its share while the spin burns it. What
// tells the thread the truth is the time it spent runnable but not running: the run delay the kernel keeps
// per thread (/proc/thread-self/schedstat: time on a CPU, time waiting on a run queue). A thread whose
// recent runnable time was more than kContendedShare waiting, and at least kContendedDelay, is on a machine
// with no free core. The read costs a pread of an open file (about 2 us), so a thread takes a new reading at
// most every kContendedEvery and needs kContendedWindow of runnable time since its last verdict before it
// changes it, or kContendedStale of wall time: a thread that mostly sleeps (the scheduler leaving its work to
// the clients) runs too little to fill the window, and its wake-up delay alone then decides, so the verdict
// follows the load going away. Without the file (not Linux, no schedstats) it never finds the cores contended,
// and the slow yield is the only signal.
inline constexpr double kContendedShare = 0.2;
inline constexpr auto kContendedDelay = std::chrono::microseconds(100);
inline constexpr auto kContendedEvery = std::chrono::milliseconds(2);
inline constexpr auto kContendedWindow = std::chrono::microseconds(500);
inline constexpr auto kContendedStale = std::chrono::milliseconds(15);

/** True when the calling thread recently waited for a core for more than kContendedShare of its runnable time
 * (Note [Waiting for a core]); cheap to call often (a clock read between readings). */
bool cores_contended();

/** A short busy-wait hint to the CPU (a pause on x86-64): polls without giving the core away. */
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace rill
