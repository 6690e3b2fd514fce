#include "rill/runtime/trace.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "rill/runtime/process_group.h"
#include "rill/util/chrome_trace.h"
#include "rill/util/env.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"
#include "rill/vm/instruction.h"

// Note [The actors' trace]
// A runtime built while RILL_GRAPH_TRACE is set labels its tasks (TaskLabels) and
// times each kernel its actors run (compute, copy and acc acts; views, ticks and
// repeats run none). An actor records into the buffer of the worker it runs on
// (runtime.cpp's Worker), which only that thread touches during an iteration: no
// lock and no allocation past the buffer's growth per event. When the iteration
// has drained, every worker's last event happened before run() saw nothing
// pending (Note [Actors]: the acq_rel chain on pending_), so run() hands the
// buffers to this process-wide list under one lock per worker and iteration.
// The file is written whole, from every event so far: at the process's exit (a
// C atexit hook, which runs after Python's, so after the VM has drained the
// graph launches still queued) and by write() (rill.nn.Graph.write_trace()).
// Written as the VM trace is: Chrome trace-event JSON, one complete event per
// kernel on the OS thread that ran it, the threads named. In a forked child the
// list is replaced and recording is off: a child never writes over its parent's
// trace.
// Under rill.distributed each rank writes its own file, "<name>.rank<r>.json" for RILL_GRAPH_TRACE=<name>.json,
// its process named "rank r", with the clock its times count from (otherData.start_ns, CLOCK_MONOTONIC: the
// same for the ranks of one host): tools/merge_graph_traces.py puts the ranks side by side on one timeline, each
// rank's threads (the compute thread, each transfer's) on their own tracks.
namespace rill::runtime::trace {
namespace {

struct Entry {
  int32_t labels;  // index in State::labels
  int64_t iteration;
  KernelEvent event;
};

struct State {
  std::mutex mutex;  // guards everything below
  bool disabled = false;  // a forked child
  std::string path;       // the first RILL_GRAPH_TRACE a runtime saw (under rill.distributed, with the rank)
  int rank = -1;          // this process's rank under rill.distributed, else -1
  int64_t start_ns = 0;   // the trace's time 0
  std::vector<std::shared_ptr<const TaskLabels>> labels;
  std::unordered_map<const TaskLabels*, int32_t> label_index;
  std::vector<Entry> entries;
  std::vector<std::pair<int64_t, std::string>> threads;  // tid, name
};

std::atomic<State*> g_state{new State()};  // leaked: the exit hook runs during static destruction

thread_local int64_t t_tid = 0;
thread_local uint32_t t_tid_epoch = 0;

State& state() { return *g_state.load(std::memory_order_acquire); }  // acquire: the child's fresh state

void forget_in_child(void*) {
  auto* fresh = new State();  // the parent's is leaked: its mutex may be held by a thread the child lacks
  fresh->disabled = true;
  g_state.store(fresh, std::memory_order_release);  // release: see state()
}

void write_at_exit() {
  try {
    write();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill: RILL_GRAPH_TRACE: %s\n", e.what());
  }
}

using chrome_trace::json_string;
using chrome_trace::micros;

void write_events(std::FILE* f, const State& s) {
  const long long pid = static_cast<long long>(::getpid());
  std::fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"rill graph trace\", "
               "\"start_ns\": %lld, \"rank\": %d},\n", static_cast<long long>(s.start_ns), s.rank);
  std::fprintf(f, "\"traceEvents\": [\n");
  const std::string process = s.rank < 0 ? "rill" : "rank " + std::to_string(s.rank);
  std::fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": {\"name\": %s}}", pid,
               json_string(process).c_str());
  for (const auto& [tid, name] : s.threads)
    std::fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                 "\"args\": {\"name\": %s}}", pid, static_cast<long long>(tid), json_string(name).c_str());
  for (const Entry& e : s.entries) {
    const TaskLabels& l = *s.labels[e.labels];
    const KernelEvent& k = e.event;
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": %s, \"ph\": \"X\", \"ts\": %s, \"dur\": %s, \"pid\": %lld, "
                 "\"tid\": %lld, \"args\": {\"graph\": %s, \"op\": %s, \"task_id\": %s, \"iteration\": %lld, "
                 "\"piece\": %lld}}",
                 json_string(l.names[k.actor]).c_str(), json_string(l.ops[k.actor]).c_str(),
                 micros(k.start_ns - s.start_ns).c_str(), micros(k.end_ns - k.start_ns).c_str(), pid,
                 static_cast<long long>(k.tid), json_string(l.graph).c_str(), json_string(l.ops[k.actor]).c_str(),
                 json_string(l.ids[k.actor]).c_str(), static_cast<long long>(e.iteration),
                 static_cast<long long>(k.piece));
  }
  std::fprintf(f, "\n]}\n");
}

}  // namespace

std::optional<std::string> path_from_env() {
  static const bool registered = [] {
    fork::on_fork(fork::Stage::kLock, {nullptr, nullptr, forget_in_child, nullptr});
    return true;
  }();
  (void)registered;
  State& s = state();
  auto path = env::get_string("RILL_GRAPH_TRACE");
  if (!path) return std::nullopt;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.disabled) return std::nullopt;
  if (s.path.empty()) {
    s.path = *path;
    if (const std::optional<ProcessGroup> group = process_group()) {  // each rank its own file
      s.rank = group->rank;
      const size_t dot = s.path.rfind('.');
      const size_t slash = s.path.rfind('/');
      const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
      s.path.insert(has_ext ? dot : s.path.size(), ".rank" + std::to_string(s.rank));
    }
    s.start_ns = vm::now_ns();
    std::atexit(write_at_exit);
  }
  return s.path;
}

int64_t this_thread_id() {
  if (t_tid != 0 && t_tid_epoch == fork::epoch()) return t_tid;
  t_tid = static_cast<int64_t>(::syscall(SYS_gettid));
  t_tid_epoch = fork::epoch();
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);  // once per thread
  s.threads.emplace_back(t_tid, name);
  return t_tid;
}

void add(const std::shared_ptr<const TaskLabels>& labels, int64_t iteration, std::vector<KernelEvent>& events) {
  if (events.empty()) return;
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.disabled) {
      auto [it, fresh] = s.label_index.emplace(labels.get(), static_cast<int32_t>(s.labels.size()));
      if (fresh) s.labels.push_back(labels);  // kept, so the pointer is never reused by other labels
      for (const KernelEvent& e : events) s.entries.push_back(Entry{it->second, iteration, e});
    }
  }
  events.clear();
}

int64_t write() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.disabled || s.path.empty()) return 0;
  std::FILE* f = std::fopen(s.path.c_str(), "w");
  RILL_CHECK(f, Runtime, "[graph trace] can't write the trace to ", s.path, ": ", std::strerror(errno),
             "; set RILL_GRAPH_TRACE to a file in a writable directory");
  write_events(f, s);
  bool ok = std::ferror(f) == 0;
  ok &= std::fclose(f) == 0;
  RILL_CHECK(ok, Runtime, "[graph trace] writing the trace to ", s.path, " failed: ", std::strerror(errno));
  return static_cast<int64_t>(s.entries.size());
}

int64_t recorded() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<int64_t>(s.entries.size());
}

}  // namespace rill::runtime::trace
