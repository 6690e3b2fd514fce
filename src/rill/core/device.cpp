#include "rill/core/device.h"

#include "rill/util/error.h"

namespace rill {

std::string Device::str() const {
  std::string s = type == DeviceType::kCPU ? "cpu" : "cuda";
  if (type != DeviceType::kCPU) s += ":" + std::to_string(index);
  return s;
}

Device Device::parse(const std::string& text) {
  std::string kind = text;
  int index = 0;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    kind = text.substr(0, colon);
    std::string idx = text.substr(colon + 1);
    RILL_CHECK(!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos && idx.size() < 6,
               Value, "[device] expected a device like 'cpu' or 'cpu:0', got '", text, "'");
    index = std::stoi(idx);
  }
  if (kind == "cpu") {
    RILL_CHECK(index == 0, Value, "[device] there is one CPU device, 'cpu' (index 0); got '", text, "'");
    return Device{DeviceType::kCPU, 0};
  }
  if (kind == "cuda") RILL_FAIL(Runtime, "[device] rill was built without CUDA; use device='cpu'");
  RILL_FAIL(Value, "[device] unknown device '", text, "'; expected 'cpu'");
}

}  // namespace rill
