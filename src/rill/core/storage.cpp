#include "rill/core/storage.h"

#include "rill/core/allocator.h"

namespace rill {

Storage::~Storage() {
  void* p = data_.load(std::memory_order_acquire);
  if (deleter_) {
    deleter_(ctx_, p);
  } else if (p) {
    cpu_allocator::release(p);
  }
}

void* Storage::allocate() {
  void* fresh = cpu_allocator::allocate(nbytes_);
  void* expected = nullptr;
  // acq_rel: publish the block to other threads, or see the block another thread published.
  if (data_.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
  cpu_allocator::release(fresh);
  return expected;
}

}  // namespace rill
