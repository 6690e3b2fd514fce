// util/: symbols, env knobs, the intra-op pool.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "rill/core/tensor_meta.h"
#include "rill/util/env.h"
#include "rill/util/error.h"
#include "rill/util/parallel.h"
#include "rill/util/spin.h"

namespace rill {
namespace {

TEST(Symbol, EqualValuesShareOnePointer) {
  MetaSym a = make_contiguous_meta({2, 3}, DType::kFloat32);
  MetaSym b = make_contiguous_meta({2, 3}, DType::kFloat32);
  MetaSym c = make_contiguous_meta({3, 2}, DType::kFloat32);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(a->numel, 6);
  EXPECT_TRUE(a->contiguous);
}

TEST(Env, OverrideWinsAndCanBeRemoved) {
  EXPECT_EQ(env::get_int("RILL_TEST_KNOB_X", 7), 7);
  uint64_t g = env::generation();
  env::set_override("RILL_TEST_KNOB_X", "42");
  EXPECT_EQ(env::get_int("RILL_TEST_KNOB_X", 7), 42);
  EXPECT_GT(env::generation(), g);
  env::set_override("RILL_TEST_KNOB_X", "abc");
  EXPECT_THROW(env::get_int("RILL_TEST_KNOB_X", 7), Error);
  env::set_override("RILL_TEST_KNOB_X", std::nullopt);
  EXPECT_EQ(env::get_int("RILL_TEST_KNOB_X", 7), 7);
  env::set_override("RILL_TEST_KNOB_B", "on");
  EXPECT_TRUE(env::get_bool("RILL_TEST_KNOB_B", false));
  env::set_override("RILL_TEST_KNOB_B", std::nullopt);
}

TEST(Parallel, CoversTheRangeExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    parallel::set_num_threads(threads);
    std::vector<std::atomic<int>> hits(100000);
    parallel::parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  parallel::set_num_threads(2);
}

TEST(Parallel, PropagatesExceptions) {
  parallel::set_num_threads(2);
  EXPECT_THROW(parallel::parallel_for(0, 100000, 10,
                                      [](int64_t b, int64_t) {
                                        if (b > 0) throw std::runtime_error("boom");
                                      }),
               std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int64_t> total{0};
  parallel::parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 1000);
}

TEST(Parallel, WaitersHelpRunningRegions) {
  parallel::set_num_threads(2);
  EXPECT_FALSE(parallel::busy());
  EXPECT_FALSE(parallel::help());  // no region: nothing to run
  // One thread runs regions back to back while another keeps helping: every element is still covered
  // exactly once, and nothing the helper touches outlives its region (the TSan build checks the races).
  std::vector<std::atomic<int>> hits(200000);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> helped{0};
  std::thread helper([&] {
    while (!stop.load()) helped += parallel::help() ? 1 : 0;
  });
  for (int round = 0; round < 50; ++round) {
    parallel::parallel_for(0, 200000, 1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
  }
  stop = true;
  helper.join();
  for (auto& h : hits) ASSERT_EQ(h.load(), 50);
  EXPECT_FALSE(parallel::busy());
  RecordProperty("regions_helped", static_cast<int>(helped.load()));
}

// Note [Waiting for a core] in util/spin.h: with twice as many busy threads as cores, each waits for a core more
// than half the time it is runnable, and the run delay says so.
TEST(Spin, OversubscribedCoresAreContended) {
  if (access("/proc/thread-self/schedstat", R_OK) != 0) GTEST_SKIP() << "no per-thread schedstat here";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> stop{false}, seen{false};
  std::vector<std::thread> busy;
  for (unsigned k = 0; k < 2 * cores + 1; ++k)
    busy.emplace_back([&] {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until)
        if (cores_contended()) seen.store(true, std::memory_order_relaxed);
    });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!seen.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop.store(true);
  for (auto& t : busy) t.join();
  EXPECT_TRUE(seen.load()) << "no busy thread found the cores contended";
}

TEST(Error, CarriesKindAndMessage) {
  try {
    RILL_CHECK(1 == 2, Index, "[op] bad index ", 5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIndex);
    EXPECT_STREQ(e.what(), "[op] bad index 5");
  }
}

}  // namespace
}  // namespace rill
