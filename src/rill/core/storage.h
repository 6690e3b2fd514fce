// Storage: the memory behind one or more tensors (views share it). Memory is
// obtained when the first instruction writing it runs, not when the tensor is
// created (docs/architecture.md §2 step 3); external memory (numpy, DLPack) is adopted with
// its own deleter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rill/core/device.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill {

struct GlobalInfo;  // core/sbp.h

/** The VM's record of in-flight accesses to one storage (Note [Dependences] in
 * vm/dependence.h). Opaque instruction pointers; only the scheduler thread touches it. */
struct AccessList {
  void* last_write = nullptr;
  std::vector<void*> reads;  // in-flight readers since last_write
};

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
  bool allocated() const { return data_.load(std::memory_order_acquire) != nullptr; }
  /** Memory pointer; allocates on first call (thread-safe: one allocation wins). */
  void* data() {
    void* p = data_.load(std::memory_order_acquire);
    return (p || deleter_) ? p : allocate();  // external memory is never replaced
  }
  /** True for memory adopted from numpy or DLPack. */
  bool external() const { return deleter_ != nullptr; }
  /** Mark the memory as visible to code outside rill (numpy(), DLPack export, data_ptr()). */
  void mark_exported() { exported_.store(true, std::memory_order_relaxed); }
  /** True when code outside rill may read or write this memory (Note [Shared memory is synchronous]
   * in eager/functional.cpp). */
  bool shared() const { return deleter_ != nullptr || exported_.load(std::memory_order_relaxed); }
  /** In-flight accesses, for the VM's scheduler. */
  AccessList& accesses() { return accesses_; }
  /** Instructions submitted that write this storage and have not retired. Client threads
   * count up at submission, the scheduler counts down at retirement (release), so a client
   * that reads 0 (acquire) sees every write done. */
  std::atomic<int32_t>& writes_in_flight() { return writes_in_flight_; }
  /** The fork epoch (util/fork.h) in which the VM last saw this storage; Note [Fork] in vm/fork.cpp. */
  std::atomic<uint32_t>& vm_epoch() { return vm_epoch_; }
  /** The error that poisoned this storage (a failed write), or null. Written by the VM thread
   * that ran the failing instruction before it completes; read after a sync. */
  const std::shared_ptr<const Error>& poison() const { return poison_; }
  void set_poison(std::shared_ptr<const Error> e) { poison_ = std::move(e); }
  /** What makes the tensors over this storage global (core/sbp.h), or null: a global tensor's storage holds no
   * memory. */
  const std::shared_ptr<const GlobalInfo>& global() const { return global_; }
  void set_global(std::shared_ptr<const GlobalInfo> g) { global_ = std::move(g); }
  /** Times this memory was written in place (Note [Version counter] in autograd/node.h). */
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  /** Record one in-place write (in-place ops, copy_, fill_, setitem). */
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* allocate();
  size_t nbytes_;
  Device device_;
  std::atomic<void*> data_{nullptr};
  Deleter deleter_ = nullptr;
  void* ctx_ = nullptr;
  AccessList accesses_;
  std::atomic<int32_t> writes_in_flight_{0};
  std::atomic<uint32_t> vm_epoch_{fork::epoch()};
  std::shared_ptr<const Error> poison_;
  std::shared_ptr<const GlobalInfo> global_;
  std::atomic<bool> exported_{false};
  std::atomic<uint32_t> version_{0};
};

}  // namespace rill
