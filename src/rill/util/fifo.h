// A first-in first-out queue on one vector: no memory until the first push (std::deque takes a block of
// ~512 bytes even empty, which for the thousands of actor slots of a large plan is tens of MB), and none
// in the steady state once the vector has grown to the most items held at once.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace rill {

template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  const T& front() const { return items_[head_]; }
  T& front() { return items_[head_]; }
  void push_back(const T& x) {
    if (head_ > 0 && head_ * 2 >= items_.size()) {  // the popped half goes before the vector grows
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    items_.push_back(x);
  }
  void pop_front() {
    if (++head_ == items_.size()) clear();
  }
  void swap(Fifo& other) noexcept {
    items_.swap(other.items_);
    std::swap(head_, other.head_);
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

}  // namespace rill
