#include "rill/core/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill::cpu_allocator {
namespace {

// Size classes: multiples of 64 bytes up to 1 KiB, then four classes per power of two,
// so rounding wastes at most 25% and blocks of nearby sizes are interchangeable.
constexpr int kSmallClasses = 16;  // 64, 128, ..., 1024
constexpr int kNumClasses = kSmallClasses + 4 * 54;

// The class of an n-byte request, and its rounded size.
int size_class(size_t n, size_t* rounded) {
  if (n <= 1024) {
    size_t k = n == 0 ? 1 : (n + kAlignment - 1) / kAlignment;
    *rounded = k * kAlignment;
    return static_cast<int>(k) - 1;
  }
  int log = 63 - __builtin_clzll(n - 1);  // highest power of two below n: 2^log < n <= 2^(log+1)
  size_t step = (size_t{1} << log) / 4;
  size_t k = (n + step - 1) / step;  // 5..8 steps of a quarter
  *rounded = k * step;
  return kSmallClasses + (log - 10) * 4 + static_cast<int>(k - 5);
}

// Note [Block header]
// Each block carries a 64-byte header before the pointer handed out (so the
// pointer stays 64-byte aligned) holding its size class and a tag. release()
// reads the class from there instead of looking the pointer up in a table, so
// an allocate/release pair is one lock and no bookkeeping allocation; the tag
// catches a pointer that did not come from allocate().
struct alignas(kAlignment) Header {
  uint64_t tag;
  int32_t size_class;
  uint64_t size;
};
static_assert(sizeof(Header) == kAlignment);
constexpr uint64_t kLiveTag = 0x72696c6c2d6c6976;  // "rill-liv"
constexpr uint64_t kFreeTag = 0x72696c6c2d667265;  // "rill-fre"

Header* header_of(void* p) { return static_cast<Header*>(p) - 1; }

struct State {
  std::mutex mutex;
  std::vector<void*> free_lists[kNumClasses];  // cached blocks (user pointers) per class
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

void* system_allocate(size_t size) {
  void* raw = std::aligned_alloc(kAlignment, size + sizeof(Header));
  return raw ? static_cast<Header*>(raw) + 1 : nullptr;
}

}  // namespace

void* allocate(size_t nbytes) {
  size_t size;
  int cls = size_class(nbytes, &size);
  State& s = state();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stats.num_allocs;
    std::vector<void*>& list = s.free_lists[cls];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      ++s.stats.num_cache_hits;
      s.stats.allocated_bytes += static_cast<int64_t>(size);
      s.stats.peak_allocated_bytes = std::max(s.stats.peak_allocated_bytes, s.stats.allocated_bytes);
    }
  }
  if (p) {
    header_of(p)->tag = kLiveTag;
    return p;
  }
  p = system_allocate(size);
  if (!p) {
    empty_cache();
    p = system_allocate(size);
  }
  RILL_CHECK(p != nullptr, Runtime, "[allocator] out of memory: could not allocate ", nbytes,
             " bytes on the CPU; free some tensors or call rill.empty_cache()");
  *header_of(p) = Header{kLiveTag, cls, size};
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.stats.num_system_allocs;
  s.stats.reserved_bytes += static_cast<int64_t>(size);
  s.stats.allocated_bytes += static_cast<int64_t>(size);
  s.stats.peak_allocated_bytes = std::max(s.stats.peak_allocated_bytes, s.stats.allocated_bytes);
  return p;
}

void release(void* ptr) {
  if (!ptr) return;
  Header* h = header_of(ptr);
  RILL_ASSERT(h->tag == kLiveTag, "release of a pointer the CPU allocator does not own (or released twice)");
  h->tag = kFreeTag;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.stats.num_frees;
  s.stats.allocated_bytes -= static_cast<int64_t>(h->size);
  s.free_lists[h->size_class].push_back(ptr);
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
  for (std::vector<void*>& blocks : s.free_lists) {
    for (void* p : blocks) {
      s.stats.reserved_bytes -= static_cast<int64_t>(header_of(p)->size);
      std::free(header_of(p));
    }
    blocks.clear();
  }
}

}  // namespace rill::cpu_allocator
