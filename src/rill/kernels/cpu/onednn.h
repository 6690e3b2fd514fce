// What the oneDNN-backed kernels (conv.cpp, pool.cpp) share: the engine, the
// per-thread state a primitive runs with (Note [oneDNN threads]), and the cache
// of created primitives, whose creation is serialised against fork() (Note
// [oneDNN and fork]). Internal to kernels/cpu.
#pragma once

#include <dnnl.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rill::cpu::onednn {

/** The process's CPU engine (created on first use, never destroyed). */
dnnl::engine& engine();

/** Per-thread state for running primitives: a stream and reusable buffers (scratchpads, reorders, workspaces). */
struct ThreadState {
  /** Buffers a thread keeps; callers pick the index. */
  static constexpr int kNumBuffers = 4;

  dnnl::stream stream;

  ThreadState();
  /** Buffer i with room for at least bytes (64-byte aligned); RuntimeError naming op when out of memory. */
  void* buffer(int i, size_t bytes, const char* op);

 private:
  struct Buffer {
    std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  Buffer buffers_[kNumBuffers];
};

/** The calling thread's state; creating it sets the thread's OpenMP thread count to 1 (Note [oneDNN threads]).
 * Call it before creating a primitive too: oneDNN sizes its work split by the creating thread's count. */
ThreadState& thread_state();

/** The mutex every primitive creation holds; held across fork() (Note [oneDNN and fork]). */
std::mutex& creation_mutex();

/** A key of K integers (an op family's pass and geometry). */
template <size_t K>
struct Key {
  std::array<int64_t, K> v;
  bool operator==(const Key&) const = default;
};

/** Hash of a Key. */
struct KeyHash {
  template <size_t K>
  size_t operator()(const Key<K>& k) const {
    size_t h = 0;
    for (int64_t x : k.v) h = h * 1000003u ^ static_cast<size_t>(x);
    return h;
  }
};

/** Created primitives by key. oneDNN caches primitives itself, but creating the primitive descriptor
 * (implementation dispatch) costs tens of microseconds per call; this cache skips it. Bounded: cleared when
 * it grows past kMaxEntries (callers keep the entries they hold alive). */
template <typename Prim, size_t K>
class PrimitiveCache {
 public:
  static constexpr size_t kMaxEntries = 512;

  /** The entry for key, made by create() under creation_mutex() when missing. */
  template <typename Create>
  std::shared_ptr<const Prim> get(const Key<K>& key, const Create& create) {
    thread_state();  // one OpenMP thread before creating (Note [oneDNN threads])
    std::lock_guard<std::mutex> lock(creation_mutex());
    auto it = map_.find(key);
    if (it != map_.end()) return it->second;
    auto prim = std::make_shared<const Prim>(create());
    if (map_.size() >= kMaxEntries) map_.clear();
    return map_.emplace(key, std::move(prim)).first->second;
  }

 private:
  std::unordered_map<Key<K>, std::shared_ptr<const Prim>, KeyHash> map_;
};

}  // namespace rill::cpu::onednn
