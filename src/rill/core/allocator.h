// The CPU caching allocator: 64-byte aligned blocks kept in size-class free
// lists after release, so a training loop reuses memory instead of calling
// malloc per op. Thread-safe. Statistics are exported as rill.memory_stats().
#pragma once

#include <cstddef>
#include <cstdint>

namespace rill {

/** Counters of the CPU allocator. */
struct AllocatorStats {
  int64_t allocated_bytes = 0;       // bytes in live blocks (rounded sizes)
  int64_t peak_allocated_bytes = 0;  // high-water mark of allocated_bytes
  int64_t reserved_bytes = 0;        // live + cached bytes obtained from the system
  int64_t num_allocs = 0;            // allocate() calls
  int64_t num_frees = 0;             // release() calls
  int64_t num_cache_hits = 0;        // allocate() calls served from the cache
  int64_t num_system_allocs = 0;     // blocks obtained from the system
};

/** Memory for tensors on the CPU. */
namespace cpu_allocator {
/** Alignment of every block. */
inline constexpr size_t kAlignment = 64;
/** A block of at least nbytes, 64-byte aligned (nbytes may be 0). Raises RuntimeError when out of memory. */
void* allocate(size_t nbytes);
/** Return a block from allocate() to the cache. */
void release(void* ptr);
/** Current counters. */
AllocatorStats stats();
/** Reset the peak to the current allocation. */
void reset_peak();
/** Free every cached block back to the system. */
void empty_cache();
}  // namespace cpu_allocator

}  // namespace rill
