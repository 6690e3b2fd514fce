// Symbol<T>: an interned immutable value. Equal values share one pointer, so
// comparing or hashing a Symbol is a pointer operation and a cache key made of
// symbols is a few pointers (docs/architecture.md §2, the inference cache).
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "rill/util/fork.h"

namespace rill {

/** Interned value of T. T needs operator== and a `size_t hash() const`. */
template <typename T>
class Symbol {
 public:
  Symbol() = default;
  /** Intern value: returns the unique Symbol equal to it. Thread-safe. */
  static Symbol intern(const T& value) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.values.insert(value).first;
    return Symbol(&*it);
  }
  const T& operator*() const { return *ptr_; }
  const T* operator->() const { return ptr_; }
  const T* get() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool operator==(const Symbol& o) const { return ptr_ == o.ptr_; }
  bool operator!=(const Symbol& o) const { return ptr_ != o.ptr_; }

  /** Number of distinct values interned so far (for tests). */
  static size_t table_size() {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    return t.values.size();
  }

 private:
  explicit Symbol(const T* p) : ptr_(p) {}
  struct Hash {
    size_t operator()(const T& v) const { return v.hash(); }
  };
  struct Table {
    std::mutex mutex;
    std::unordered_set<T, Hash> values;  // node-based: element addresses are stable
  };
  // Leaked on purpose: symbols may be used during static destruction.
  static Table& table() {
    static Table* t = [] {
      auto* fresh = new Table();
      fork::guard_mutex(&fresh->mutex);
      return fresh;
    }();
    return *t;
  }
  const T* ptr_ = nullptr;
};

/** Combine a hash value into seed (boost-style). */
inline void hash_combine(size_t& seed, size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace rill

template <typename T>
struct std::hash<rill::Symbol<T>> {
  size_t operator()(const rill::Symbol<T>& s) const { return std::hash<const void*>()(s.get()); }
};
