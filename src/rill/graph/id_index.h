// IdIndex: where each id of a plan's tasks or registers is in its list. The compiler numbers both in the order it
// makes them, so the ids come sorted and an index is one array searched by halves: no node per id, which a
// ten-thousand-task plan's hash maps of ids allocated and missed the cache on. A list in another order (a plan
// made by hand) is sorted first.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rill::graph {

class IdIndex {
 public:
  IdIndex() = default;
  /** The index of the ids of items (messages with id()), in their order. */
  template <typename Items>
  explicit IdIndex(const Items& items) {
    by_id_.reserve(static_cast<size_t>(items.size()));
    for (const auto& item : items) add(item.id());
  }
  /** id is at the next index (after every id added so far). */
  void add(int64_t id) {
    sorted_ = sorted_ && (by_id_.empty() || by_id_.back().first < id);
    by_id_.emplace_back(id, static_cast<int>(by_id_.size()));
  }
  /** Where id is, or -1. */
  int find(int64_t id) const {
    if (!sorted_) sort();
    if (by_id_.empty()) return -1;
    // The compiler's ids mostly count up by one: the id's place is then its distance from the first.
    const uint64_t guess = static_cast<uint64_t>(id) - static_cast<uint64_t>(by_id_.front().first);
    if (guess < by_id_.size() && by_id_[guess].first == id) return by_id_[guess].second;
    auto it = std::lower_bound(by_id_.begin(), by_id_.end(), std::pair<int64_t, int>{id, -1});
    return it != by_id_.end() && it->first == id ? it->second : -1;
  }
  /** An id listed twice, if any. */
  std::optional<int64_t> repeated() const {
    if (!sorted_) sort();
    for (size_t k = 1; k < by_id_.size(); ++k)
      if (by_id_[k].first == by_id_[k - 1].first) return by_id_[k].first;
    return std::nullopt;
  }

 private:
  void sort() const {
    std::sort(by_id_.begin(), by_id_.end());
    sorted_ = true;
  }
  mutable std::vector<std::pair<int64_t, int>> by_id_;  // (id, index), sorted by id once searched
  mutable bool sorted_ = true;
};

}  // namespace rill::graph
