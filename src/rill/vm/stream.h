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
  bool operator==(const Stream&) const = default;
};

}  // namespace rill::vm
