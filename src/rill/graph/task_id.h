// Task ids (DESIGN.md §6): 64 bits that say where a task runs, so that ranks
// compiling their own parts of one job (separate compilation) can name each
// other's tasks without asking:
//
//   | rank: 16 | device type: 5 | device index: 7 | stream: 12 | task index: 24 |
//
// The runtime reads the stream to pick the actor thread; register, mem-block and
// chunk ids are (rank << 48) + counter for the same reason.
#pragma once

#include <cstdint>

#include "rill/core/device.h"

namespace rill::graph {

struct TaskIdParts {
  int64_t rank = 0;
  DeviceType device_type = DeviceType::kCPU;
  int64_t device_index = 0;
  int64_t stream = 0;
  int64_t index = 0;
};

inline constexpr int kTaskIndexBits = 24;
inline constexpr int kStreamBits = 12;
inline constexpr int kDeviceIndexBits = 7;
inline constexpr int kDeviceTypeBits = 5;
inline constexpr int kRankBits = 16;

/** The id of the task at parts; raises RuntimeError when a field does not fit its bits. */
int64_t encode_task_id(const TaskIdParts& parts);
/** The fields of a task id. */
TaskIdParts decode_task_id(int64_t id);
/** "rank 0 cpu:0 stream 0 task 12". */
std::string task_id_str(int64_t id);
/** The id counter k of rank's segment for registers, mem blocks and chunks: (rank << 48) + k. */
inline int64_t rank_segment_id(int64_t rank, int64_t k) { return (rank << 48) + k; }

}  // namespace rill::graph
