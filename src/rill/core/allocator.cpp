#include "rill/core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill::cpu_allocator {
namespace {

// Size classes: multiples of 64 bytes up to 1 KiB, then four classes per power of two,
// so rounding wastes at most 25% and blocks of nearby sizes are interchangeable.
size_t round_size(size_t n) {
  if (n <= 1024) return n == 0 ? kAlignment : (n + kAlignment - 1) / kAlignment * kAlignment;
  size_t p = size_t{1} << (63 - __builtin_clzll(n - 1));  // highest power of two below n
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

struct State {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_lists;  // rounded size -> cached blocks
  std::unordered_map<void*, size_t> live;                     // block -> rounded size
  AllocatorStats stats;
};

State& state() {
  static State* s = [] {
    auto* fresh = new State();  // leaked: tensors may die during static destruction
    fork::guard_mutex(&fresh->mutex);
    return fresh;
  }();
  return *s;
}

}  // namespace

void* allocate(size_t nbytes) {
  size_t size = round_size(nbytes);
  State& s = state();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stats.num_allocs;
    auto it = s.free_lists.find(size);
    if (it != s.free_lists.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      ++s.stats.num_cache_hits;
    }
  }
  if (!p) {
    p = std::aligned_alloc(kAlignment, size);
    if (!p) {
      empty_cache();
      p = std::aligned_alloc(kAlignment, size);
    }
    RILL_CHECK(p != nullptr, Runtime, "[allocator] out of memory: could not allocate ", nbytes,
               " bytes on the CPU; free some tensors or call rill.empty_cache()");
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stats.num_system_allocs;
    s.stats.reserved_bytes += static_cast<int64_t>(size);
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.live[p] = size;
  s.stats.allocated_bytes += static_cast<int64_t>(size);
  if (s.stats.allocated_bytes > s.stats.peak_allocated_bytes)
    s.stats.peak_allocated_bytes = s.stats.allocated_bytes;
  return p;
}

void release(void* ptr) {
  if (!ptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.live.find(ptr);
  RILL_ASSERT(it != s.live.end(), "release of a pointer the CPU allocator does not own");
  size_t size = it->second;
  s.live.erase(it);
  ++s.stats.num_frees;
  s.stats.allocated_bytes -= static_cast<int64_t>(size);
  s.free_lists[size].push_back(ptr);
}

AllocatorStats stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void reset_peak() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.peak_allocated_bytes = s.stats.allocated_bytes;
}

void empty_cache() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& [size, blocks] : s.free_lists) {
    for (void* p : blocks) std::free(p);
    s.stats.reserved_bytes -= static_cast<int64_t>(size * blocks.size());
    blocks.clear();
  }
}

}  // namespace rill::cpu_allocator
