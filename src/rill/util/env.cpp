#include "rill/util/env.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill::env {
namespace {
std::mutex g_mutex;
std::unordered_map<std::string, std::string>& overrides() {
  static auto* table = [] {
    fork::guard_mutex(&g_mutex);
    return new std::unordered_map<std::string, std::string>();
  }();
  return *table;
}
std::atomic<uint64_t> g_generation{0};

std::optional<std::string> lookup(const char* name) {
  auto& table = overrides();  // first, outside g_mutex: its first call registers a fork handler
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = table.find(name);
    if (it != table.end()) return it->second;
  }
  if (const char* v = std::getenv(name)) return std::string(v);
  return std::nullopt;
}
}  // namespace

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = {
      {"RILL_NUM_THREADS", "2", "intra-op threads used by CPU kernels (rill.set_num_threads)"},
      {"RILL_VM_MULTI_THREAD", "1", "0 runs every instruction on the calling thread (errors raise at their line)"},
      {"RILL_VM_COMPUTE_ON_WORKER_THREAD", "0",
       "1 runs thread 0's instructions on rill-worker-0 instead of inline on the scheduler"},
      {"RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS", "200",
       "how long an idle VM or intra-op thread keeps polling (yielding) before it blocks; 0 blocks at once"},
      {"RILL_VM_MAX_IN_FLIGHT", "16384", "instructions in flight before a submitting thread blocks (back-pressure)"},
      {"RILL_VM_WORKER_THREAD_LIMIT", "16",
       "VM thread ids, thread 0 included: rill.asyncs.Thread() fails once all are taken (at most 64)"},
      {"RILL_VM_WAITER_RUNS_QUEUED", "1",
       "a client at a sync point runs the queued batch when the scheduler thread is not running it; 0 never, 2 always"},
      {"RILL_CPU_ISA", "", "baseline, avx2 or avx512: force that build of the hot float32 row loops"},
      {"RILL_VM_TRACE", "",
       "write a Chrome/Perfetto trace of every VM instruction to this file at exit (tools/vm_trace_summary.py)"},
      {"RILL_GRAPH_TRACE", "",
       "write a Chrome/Perfetto trace of every kernel the nn.Graph actors run to this file at exit (docs/graph.md)"},
      {"RILL_GRAPH_ACTORS", "0",
       "1 runs every nn.Graph plan by its actors' messages, also those that run in order without them"},
      {"RILL_GRAPH_COMPILE_MODE", "separate",
       "how a global graph over several ranks compiles: separate (each rank its own plan) or naive (rank 0 all)"},
      {"RILL_STRICT_DTYPE", "0",
       "1 turns strict dtype mode on for every thread that does not set its own (rill.set_strict_dtype)"},
  };
  return table;
}

int64_t get_int(const char* name, int64_t fallback) {
  auto v = lookup(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(v->c_str(), &end, 10);
  RILL_CHECK(end && *end == '\0', Value, "[env] ", name, "=", *v, " is not an integer");
  return parsed;
}

std::optional<std::string> get_string(const char* name) {
  auto v = lookup(name);
  if (!v || v->empty()) return std::nullopt;
  return v;
}

bool get_bool(const char* name, bool fallback) {
  auto v = lookup(name);
  if (!v || v->empty()) return fallback;
  if (*v == "1" || *v == "true" || *v == "on" || *v == "yes") return true;
  if (*v == "0" || *v == "false" || *v == "off" || *v == "no") return false;
  RILL_FAIL(Value, "[env] ", name, "=", *v, " is not a boolean (use 1 or 0)");
}

void set_override(const std::string& name, std::optional<std::string> value) {
  auto& table = overrides();  // first, outside g_mutex: its first call registers a fork handler
  std::lock_guard<std::mutex> lock(g_mutex);
  if (value) {
    table[name] = *value;
  } else {
    table.erase(name);
  }
  g_generation.fetch_add(1, std::memory_order_release);
}

uint64_t generation() { return g_generation.load(std::memory_order_acquire); }

}  // namespace rill::env
