#include "rill/graph/task_id.h"

#include <string>

#include "rill/util/error.h"

namespace rill::graph {
namespace {

int64_t field(int64_t v, int bits, const char* what) {
  RILL_CHECK(v >= 0 && v < (int64_t{1} << bits), Runtime, "task id: ", what, " ", v, " does not fit in ", bits,
             " bits");
  return v;
}

}  // namespace

int64_t encode_task_id(const TaskIdParts& p) {
  int64_t id = field(p.rank, kRankBits, "rank");
  id = (id << kDeviceTypeBits) | field(static_cast<int64_t>(p.device_type), kDeviceTypeBits, "device type");
  id = (id << kDeviceIndexBits) | field(p.device_index, kDeviceIndexBits, "device index");
  id = (id << kStreamBits) | field(p.stream, kStreamBits, "stream");
  return (id << kTaskIndexBits) | field(p.index, kTaskIndexBits, "task index");
}

TaskIdParts decode_task_id(int64_t id) {
  auto take = [&](int bits) {
    int64_t v = id & ((int64_t{1} << bits) - 1);
    id >>= bits;
    return v;
  };
  TaskIdParts p;
  p.index = take(kTaskIndexBits);
  p.stream = take(kStreamBits);
  p.device_index = take(kDeviceIndexBits);
  p.device_type = static_cast<DeviceType>(take(kDeviceTypeBits));
  p.rank = take(kRankBits);
  return p;
}

std::string task_id_str(int64_t id) {
  TaskIdParts p = decode_task_id(id);
  Device d{p.device_type, static_cast<int16_t>(p.device_index)};
  return "rank " + std::to_string(p.rank) + " " + d.str() + " stream " + std::to_string(p.stream) + " task " +
         std::to_string(p.index);
}

}  // namespace rill::graph
