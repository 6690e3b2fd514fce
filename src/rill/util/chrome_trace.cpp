#include "rill/util/chrome_trace.h"

#include <cstdio>

namespace rill::chrome_trace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string micros(int64_t ns) {
  char buf[32];
  const char* sign = ns < 0 ? "-" : "";
  int64_t a = ns < 0 ? -ns : ns;
  std::snprintf(buf, sizeof(buf), "%s%lld.%03lld", sign, static_cast<long long>(a / 1000),
                static_cast<long long>(a % 1000));
  return buf;
}

}  // namespace rill::chrome_trace
