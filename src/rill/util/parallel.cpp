#include "rill/util/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/util/env.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"
#include "rill/util/spin.h"

namespace rill::parallel {
namespace {

// Note [Pool and fork]
// A forked child has only the forking thread: the pool's workers are gone and
// its mutex may be held by a thread that no longer exists. The atfork child
// handler therefore drops the pool pointer (leaking the old object, whose
// threads cannot be joined) and the next parallel_for builds a new pool.

thread_local bool t_inside_parallel = false;

// Note [Waiting beside a parallel region]
// A parallel region takes num_threads() cores, and a VM thread or a client that
// polls for work or for a sync point (Note [Staying online]) while one runs
// competes with it for them. Pool::run counts the regions in flight; pollers read
// the count (relaxed: a stale answer costs only a little latency or a little CPU)
// and lend their core to the region: help() runs chunks of it that nobody has
// claimed yet. A region is cut into kChunksPerThread chunks per thread, claimed
// one at a time, so there are chunks left to lend a hand with, and a thread that
// starts late (a pool thread slow to wake, or one sharing its core with a VM
// thread) takes fewer instead of holding up the others. A client waiting on a
// sync point keeps polling (yielding) beside the region rather than sleeping:
// it sees the result without a futex wake-up. Measured on this 2-core machine at
// 2 threads, each timing settled (bench/run.py): `a.sum(); synchronize()` on 1M
// floats was about 15% faster with the client polling than sleeping, and
// `a + b; synchronize()` fastest with 2 chunks per thread (1: +5-10%, 4: +5-18%;
// more chunks means more of them change threads from one call to the next, and
// with them the core whose cache holds them).
constexpr int64_t kChunksPerThread = 2;
std::atomic<int> g_regions_running{0};

// RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS, re-read only after an override changes.
int64_t online_microseconds() {
  thread_local uint64_t generation = ~uint64_t{0};
  thread_local int64_t value = 200;
  if (env::generation() != generation) {
    generation = env::generation();
    value = std::max<int64_t>(0, env::get_int("RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", 200));
  }
  return value;
}

struct Job {
  RangeFn fn;
  void* ctx;
  int64_t begin, end, chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> pending{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  // Claims and runs chunks until none is left; true if it ran any.
  bool work() {
    for (bool ran = false;; ran = true) {
      int64_t c = next.fetch_add(1, std::memory_order_relaxed);  // chunk order does not matter
      if (c >= num_chunks) return ran;
      int64_t b = begin + c * chunk;
      int64_t e = std::min(end, b + chunk);
      try {
        fn(ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      pending.fetch_sub(1, std::memory_order_acq_rel);  // release: chunk's writes visible to caller
    }
  }
};

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { loop(i); });
    for (auto& t : threads_) t.detach();  // never joined: see Note [Pool and fork]
  }
  int size() const { return static_cast<int>(threads_.size()); }

  // Returns false when another thread is using the pool (caller runs inline).
  bool run(Job& job) {
    std::unique_lock<std::mutex> use(use_mutex_, std::try_to_lock);
    if (!use.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
      published_.store(generation_, std::memory_order_release);  // ends the workers' online spin
    }
    // Sleepers register under mutex_ and re-check generation_ before waiting, so one that
    // is not counted yet cannot miss the job.
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    g_regions_running.fetch_add(1, std::memory_order_relaxed);
    t_inside_parallel = true;
    job.work();
    t_inside_parallel = false;
    while (job.pending.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    g_regions_running.fetch_sub(1, std::memory_order_relaxed);
    {
      // No worker can pick the job up after this; the ones that did are counted in active_.
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = nullptr;
    }
    // Wait until every worker has left the job before it goes out of scope.
    while (active_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    return true;
  }

  // A thread that only waits runs chunks of the region in flight, if one is (Note [Waiting beside a
  // parallel region]). Registered in active_ under mutex_ like a worker, so the job outlives its use.
  bool help() {
    Job* job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job = job_;
      if (!job) return false;
      active_.fetch_add(1, std::memory_order_acq_rel);
    }
    bool outer = t_inside_parallel;
    t_inside_parallel = true;
    bool ran = job->work();
    t_inside_parallel = outer;
    active_.fetch_sub(1, std::memory_order_acq_rel);  // release: the caller may now destroy the job
    return ran;
  }

 private:
  void loop(int index) {
    std::string name = "rill-intraop-" + std::to_string(index + 1);
    pthread_setname_np(pthread_self(), name.c_str());
    t_inside_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      {
        // Stay online a while (Note [Staying online] in vm/scheduler.cpp): the next parallel
        // region of a loop of ops usually follows within microseconds.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(online_microseconds());
        while (published_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < deadline)
          if (!spin_yield()) break;  // no core is free (Note [Spinning on a busy machine] in util/spin.h)
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lock, [&] { return generation_ != seen && job_ != nullptr; });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        seen = generation_;
        job = job_;
        active_.fetch_add(1, std::memory_order_acq_rel);
      }
      job->work();
      active_.fetch_sub(1, std::memory_order_acq_rel);  // release: caller may now destroy the job
    }
  }

  std::vector<std::thread> threads_;
  std::mutex use_mutex_;  // one parallel region at a time
  std::mutex mutex_;
  std::condition_variable cv_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the mutex
  std::atomic<int> sleepers_{0};
  std::atomic<int> active_{0};
};

std::atomic<int> g_num_threads{0};  // 0 = not yet read from the environment
std::mutex g_pool_mutex;
Pool* g_pool = nullptr;

void on_fork_child() {
  g_pool = nullptr;  // leaked on purpose, Note [Pool and fork]
  new (&g_pool_mutex) std::mutex();
}

Pool* pool_for(int threads) {
  static bool registered = [] {
    fork::on_fork(fork::Stage::kLock, {nullptr, nullptr, [](void*) { on_fork_child(); }});
    return true;
  }();
  (void)registered;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (!g_pool || g_pool->size() != threads - 1) g_pool = new Pool(threads - 1);
  return g_pool;
}

}  // namespace

int num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    int64_t v = env::get_int("RILL_NUM_THREADS", 2);
    n = static_cast<int>(std::clamp<int64_t>(v, 1, 256));
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

bool busy() { return g_regions_running.load(std::memory_order_relaxed) > 0; }

bool help() {
  if (!busy() || t_inside_parallel) return false;
  Pool* pool;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    pool = g_pool;
  }
  return pool && pool->help();  // pools are never freed (Note [Pool and fork]), so pool stays valid
}

void set_num_threads(int n) {
  RILL_CHECK(n >= 1, Value, "[set_num_threads] expected a positive thread count, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
}

void parallel_for_raw(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx) {
  int threads = num_threads();
  grain = std::max<int64_t>(grain, 1);
  int64_t n = end - begin;
  int64_t chunks = std::min<int64_t>(threads * kChunksPerThread, (n + grain - 1) / grain);
  if (chunks <= 1 || t_inside_parallel) {
    if (n > 0) fn(ctx, begin, end);
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.begin = begin;
  job.end = end;
  job.chunk = (n + chunks - 1) / chunks;
  job.num_chunks = (n + job.chunk - 1) / job.chunk;
  job.pending.store(job.num_chunks, std::memory_order_relaxed);
  if (!pool_for(threads)->run(job)) {
    fn(ctx, begin, end);
    return;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace rill::parallel
