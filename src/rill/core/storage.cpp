#include "rill/core/storage.h"

#include "rill/core/allocator.h"

namespace rill {

Storage::~Storage() {
  if (deleter_) {
    deleter_(ctx_, data_);
  } else if (data_) {
    cpu_allocator::release(data_);
  }
}

void Storage::allocate() { data_ = cpu_allocator::allocate(nbytes_); }

}  // namespace rill
