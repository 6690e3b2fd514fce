#include "rill/util/fork.h"

#include <pthread.h>

#include <atomic>
#include <new>

#include "rill/util/error.h"

namespace rill::fork {
namespace {

// A fixed-size table, so registering and running handlers allocate nothing
// (the child of a fork must not depend on malloc state beyond glibc's own care).
constexpr int kMaxHandlers = 64;

struct Table {
  std::mutex mutex;  // guards registration only; the fork handlers read under it too
  Handler drain[kMaxHandlers];
  Handler lock[kMaxHandlers];
  int num_drain = 0;
  int num_lock = 0;
};

Table& table() {
  static Table* t = new Table();  // leaked: handlers may run during static destruction
  return *t;
}

std::atomic<uint32_t> g_epoch{0};

void run(Handler* hs, int n, void (*Handler::*which)(void*), bool reverse) {
  for (int k = 0; k < n; ++k) {
    Handler& h = hs[reverse ? n - 1 - k : k];
    if (h.*which) (h.*which)(h.ctx);
  }
}

// Drain runs with the table unlocked: syncing the VM may take a while and must not
// block registrations from VM threads. Registration after prepare started is not run
// for this fork; a part registers when it is first used, before it holds any state.
void prepare() {
  Table& t = table();
  int nd, nl;
  {
    std::lock_guard<std::mutex> g(t.mutex);
    nd = t.num_drain;
  }
  run(t.drain, nd, &Handler::prepare, false);
  t.mutex.lock();  // held across fork(): released in parent(), re-created in child()
  nl = t.num_lock;
  run(t.lock, nl, &Handler::prepare, false);
}

void parent() {
  Table& t = table();
  run(t.lock, t.num_lock, &Handler::parent, true);
  int nd = t.num_drain;
  t.mutex.unlock();
  run(t.drain, nd, &Handler::parent, true);
}

void child() {
  g_epoch.fetch_add(1, std::memory_order_relaxed);  // the child has one thread here
  Table& t = table();
  run(t.lock, t.num_lock, &Handler::child, true);
  new (&t.mutex) std::mutex();
  run(t.drain, t.num_drain, &Handler::child, true);
}

void register_once() {
  static bool done = [] {
    pthread_atfork(prepare, parent, child);
    return true;
  }();
  (void)done;
}

}  // namespace

void on_fork(Stage stage, Handler handler) {
  register_once();
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mutex);
  int& n = stage == Stage::kDrain ? t.num_drain : t.num_lock;
  Handler* hs = stage == Stage::kDrain ? t.drain : t.lock;
  RILL_ASSERT(n < kMaxHandlers, "[fork] more than ", kMaxHandlers, " fork handlers");
  hs[n++] = handler;
}

void guard_mutex(std::mutex* mutex) {
  on_fork(Stage::kLock, {[](void* m) { static_cast<std::mutex*>(m)->lock(); },
                         [](void* m) { static_cast<std::mutex*>(m)->unlock(); },
                         [](void* m) { new (m) std::mutex(); }, mutex});
}

uint32_t epoch() { return g_epoch.load(std::memory_order_relaxed); }

}  // namespace rill::fork
