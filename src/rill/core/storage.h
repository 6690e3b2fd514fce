// Storage: the memory behind one or more tensors (views share it). Memory is
// obtained when the first instruction writing it runs, not when the tensor is
// created (DESIGN.md §2 step 3); external memory (numpy, DLPack) is adopted with
// its own deleter.
#pragma once

#include <cstddef>
#include <memory>

#include "rill/core/device.h"

namespace rill {

/** A block of device memory, lazily allocated. */
class Storage {
 public:
  /** Frees external memory: deleter(ctx, data). */
  using Deleter = void (*)(void* ctx, void* data);

  /** Storage of nbytes on device, allocated on first use. */
  Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {}
  /** Adopt external memory; deleter(ctx, data) runs when the storage dies. */
  Storage(void* data, size_t nbytes, Device device, Deleter deleter, void* ctx)
      : nbytes_(nbytes), device_(device), data_(data), deleter_(deleter), ctx_(ctx) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  /** Size in bytes. */
  size_t nbytes() const { return nbytes_; }
  /** Device of the memory. */
  Device device() const { return device_; }
  /** True once memory exists. */
  bool allocated() const { return data_ != nullptr || nbytes_ == 0; }
  /** Memory pointer; allocates on first call. */
  void* data() {
    if (!data_) allocate();
    return data_;
  }
  /** True for memory adopted from numpy or DLPack. */
  bool external() const { return deleter_ != nullptr; }

 private:
  void allocate();
  size_t nbytes_;
  Device device_;
  void* data_ = nullptr;
  Deleter deleter_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace rill
