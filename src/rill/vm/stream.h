// A stream = (device, role, thread id) (docs/architecture.md §3.1). Instructions on one
// stream run in submission order on that thread id's VM thread.
#pragma once

#include <cstdint>

#include "rill/core/device.h"

namespace rill::vm {

/** What a stream carries. */
enum class StreamRole : uint8_t { kCompute, kHostToDevice, kDeviceToHost, kBarrier, kComm };

/** (device, role, thread id). */
struct Stream {
  Device device;
  StreamRole role = StreamRole::kCompute;
  int16_t thread_id = 0;
  /** A pinned stream's kernels run only on its VM thread's own worker, never on a waiting client (the comm
   * stream: MPI is called from one thread; Note [A waiter runs the queue] in scheduler.cpp). */
  bool pinned() const { return role == StreamRole::kComm; }
  bool operator==(const Stream&) const = default;
};

}  // namespace rill::vm
