// Devices. Only the CPU exists today; the type leaves room for CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rill {

/** Kind of device. */
enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1 };
/** Number of device types (the columns of an op's kernel table). */
inline constexpr size_t kNumDeviceTypes = 2;

/** A device: type and index. */
struct Device {
  DeviceType type = DeviceType::kCPU;
  int16_t index = 0;
  bool operator==(const Device&) const = default;
  /** "cpu", "cuda:1" */
  std::string str() const;
  /** Parse "cpu", "cpu:0"; raises RuntimeError for devices this build lacks, ValueError for unknown text. */
  static Device parse(const std::string& text);
};

}  // namespace rill
