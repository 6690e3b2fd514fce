// Fork handling in one place (docs/architecture.md §3.8). Parts of rill that own process
// state register handlers here; one pthread_atfork registration runs them in a
// fixed order, whichever part was initialised first:
//   prepare: kDrain handlers (the VM syncs, when the forking thread used it),
//            then kLock handlers (short-held mutexes are taken, so the child
//            never inherits one locked by a thread that does not exist there);
//   parent:  kLock handlers release, then kDrain;
//   child:   the fork epoch is bumped, then kLock handlers re-create their
//            mutexes, then kDrain handlers (the VM forgets its threads).
#pragma once

#include <cstdint>
#include <mutex>

namespace rill::fork {

/** When a handler runs (see the order above). */
enum class Stage : uint8_t { kDrain, kLock };

/** A handler: each function (any may be null) gets ctx. */
struct Handler {
  void (*prepare)(void* ctx) = nullptr;
  void (*parent)(void* ctx) = nullptr;
  void (*child)(void* ctx) = nullptr;
  void* ctx = nullptr;
};

/** Register handler for stage (thread-safe; handlers are never removed). */
void on_fork(Stage stage, Handler handler);

/** Hold mutex across fork() (a kLock handler): the child gets it fresh and unlocked.
 * Only for mutexes held briefly and never while waiting on another thread. */
void guard_mutex(std::mutex* mutex);

/** How many forks separate this process from the one that first loaded rill (0 there). */
uint32_t epoch();

}  // namespace rill::fork
