// The pieces of a Chrome trace file (the Trace Event Format) that the VM's trace and the graph actors' trace
// both write: JSON strings and microsecond timestamps.
#pragma once

#include <cstdint>
#include <string>

namespace rill::chrome_trace {

/** text as a JSON string literal, quotes included. */
std::string json_string(const std::string& text);
/** ns nanoseconds as microseconds, exact to the nanosecond ("12.345"). */
std::string micros(int64_t ns);

}  // namespace rill::chrome_trace
