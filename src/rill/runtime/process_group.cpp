#include "rill/runtime/process_group.h"

#include <mutex>

namespace rill::runtime {
namespace {

std::mutex g_mutex;
std::optional<ProcessGroup> g_group;  // under g_mutex

}  // namespace

void set_process_group(std::optional<ProcessGroup> group) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_group = group;
}

std::optional<ProcessGroup> process_group() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_group;
}

}  // namespace rill::runtime
