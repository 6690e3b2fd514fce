#include "rill/vm/trace.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rill/util/chrome_trace.h"
#include "rill/util/env.h"
#include "rill/util/fork.h"
#include "rill/vm/virtual_machine.h"

// Note [odb anchors]: noinline and defined here, away from every caller, so each call stays a call; the
// asm statement is a side effect the optimiser must keep, so the calls are not dropped either.
extern "C" {
[[gnu::noinline]] void rill_odb_anchor_client(rill::vm::Range, const rill::vm::Instruction*) { asm volatile(""); }
[[gnu::noinline]] void rill_odb_anchor_scheduler(rill::vm::Range, const rill::vm::Instruction*) {
  asm volatile("");
}
[[gnu::noinline]] void rill_odb_anchor_worker(rill::vm::Range, const rill::vm::Instruction*) { asm volatile(""); }
[[gnu::noinline]] void rill_odb_breakpoint(const void*) { asm volatile(""); }
}

namespace rill::vm::trace {

namespace detail {
std::atomic<bool> g_recording{false};
}  // namespace detail

// Note [Trace buffers]
// Each thread that records events appends to its own ThreadLog, under the log's own
// mutex: only stop() ever takes it from another thread, so no lock is contended per
// event and no lock is global. A thread registers its log once (under the state's
// mutex). Logs outlive their threads, so a client thread that exits keeps its events.
// Trace ids grow across sessions; a session keeps the ids from its first one on, so
// events of an instruction still in flight when an earlier trace stopped are dropped.
// In a forked child the state is replaced and recording is off: a child never writes
// over its parent's trace (its logs' mutexes may have been held by threads that do not
// exist there).
namespace {

struct Record {
  int64_t ns;
  uint64_t id;
  const OpSchema* op;  // null for sync markers
  Event event;
  Instruction::Kind kind;
  bool sync_all;
  Stream stream;
};

struct ThreadLog {
  std::mutex mutex;
  std::vector<Record> records;
  std::string name;
  int64_t tid = 0;
};

struct State {
  std::mutex mutex;  // guards everything below
  std::vector<std::unique_ptr<ThreadLog>> logs;
  std::string path;
  bool from_env = false;
  bool env_disabled = false;  // RILL_VM_TRACE is ignored: a forked child (the trace is the parent's), or it failed
  uint64_t first_id = 1;
  int64_t start_ns = 0;
};

std::atomic<uint64_t> g_next_id{1};
std::atomic<State*> g_state{new State()};  // leaked: events may arrive during static destruction

thread_local ThreadLog* t_log = nullptr;
thread_local uint32_t t_log_epoch = 0;

State& state() { return *g_state.load(std::memory_order_acquire); }

void forget_in_child(void*) {
  detail::g_recording.store(false, std::memory_order_relaxed);
  auto* fresh = new State();  // the parent's is leaked: see Note [Trace buffers]
  fresh->env_disabled = true;
  g_state.store(fresh, std::memory_order_release);
}

void register_fork_handler() {
  static const bool registered = [] {
    fork::on_fork(fork::Stage::kLock, {nullptr, nullptr, forget_in_child, nullptr});
    return true;
  }();
  (void)registered;
}

ThreadLog& this_thread_log() {
  if (t_log && t_log_epoch == fork::epoch()) return *t_log;
  auto log = std::make_unique<ThreadLog>();
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  log->name = name;
  log->tid = static_cast<int64_t>(::syscall(SYS_gettid));
  log->records.reserve(4096);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  t_log = log.get();
  t_log_epoch = fork::epoch();
  s.logs.push_back(std::move(log));
  return *t_log;
}

void append(Event event, const Instruction& instr) {
  Record r{now_ns(), instr.trace_id, instr.op, event, instr.kind, instr.sync_all, instr.stream};
  ThreadLog& log = this_thread_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  log.records.push_back(r);
}

const char* role_name(StreamRole role) {
  switch (role) {
    case StreamRole::kCompute: return "compute";
    case StreamRole::kHostToDevice: return "h2d";
    case StreamRole::kDeviceToHost: return "d2h";
    case StreamRole::kBarrier: return "barrier";
    case StreamRole::kComm: return "comm";
  }
  return "?";
}

std::string instruction_name(const Record& r) {
  switch (r.kind) {
    case Instruction::Kind::kKernel: return r.op ? r.op->name : "kernel";
    case Instruction::Kind::kSync: return r.sync_all ? "sync_all" : "sync";
    case Instruction::Kind::kSyncRead: return "sync_read";
  }
  return "?";
}

using chrome_trace::json_string;
using chrome_trace::micros;

struct Span {
  const Record* event[4] = {};
  int64_t tid[4] = {};
};

// Chrome trace-event JSON (Perfetto and chrome://tracing open it): per instruction an
// instant event at submission (client thread) and at dispatch (scheduler), a complete
// event for its run (start to end, on the thread that ran it), and a flow arrow from the
// submission to the run. Metadata names the threads.
int64_t write_trace(const std::string& path, const std::vector<std::unique_ptr<ThreadLog>>& logs,
                    const std::vector<std::vector<Record>>& taken, uint64_t first_id, int64_t start_ns) {
  std::unordered_map<uint64_t, Span> spans;
  for (size_t k = 0; k < taken.size(); ++k) {
    for (const Record& r : taken[k]) {
      if (r.id < first_id) continue;
      Span& s = spans[r.id];
      s.event[static_cast<int>(r.event)] = &r;
      s.tid[static_cast<int>(r.event)] = logs[k]->tid;
    }
  }
  std::vector<std::pair<uint64_t, const Span*>> complete;
  for (const auto& [id, s] : spans) {
    if (s.event[0] && s.event[1] && s.event[2] && s.event[3]) complete.emplace_back(id, &s);
  }
  std::sort(complete.begin(), complete.end());
  std::FILE* f = std::fopen(path.c_str(), "w");
  RILL_CHECK(f, Runtime, "[vm_trace] can't write the trace to ", path, ": ", std::strerror(errno));
  const long long pid = static_cast<long long>(::getpid());
  std::fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"rill VM trace\"},\n");
  std::fprintf(f, "\"traceEvents\": [\n");
  std::fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": {\"name\": \"rill\"}}", pid);
  for (const auto& log : logs) {
    std::string name = log->name.rfind("rill-", 0) == 0 ? log->name : "client " + log->name;
    std::fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                 "\"args\": {\"name\": %s}}", pid, static_cast<long long>(log->tid), json_string(name).c_str());
  }
  for (const auto& [id, s] : complete) {
    const Record& sub = *s->event[0];
    std::string name = json_string(instruction_name(sub));
    char stream[48];
    std::snprintf(stream, sizeof(stream), "%s:%s:%d", sub.stream.device.str().c_str(), role_name(sub.stream.role),
                  static_cast<int>(sub.stream.thread_id));
    std::string args = "{\"id\": " + std::to_string(id) + ", \"stream\": \"" + stream + "\"}";
    auto ts = [&](int e) { return micros(s->event[e]->ns - start_ns); };
    auto tid = [&](int e) { return static_cast<long long>(s->tid[e]); };
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": \"submit\", \"ph\": \"i\", \"s\": \"t\", \"ts\": %s, \"pid\": %lld, "
                 "\"tid\": %lld, \"args\": %s}", name.c_str(), ts(0).c_str(), pid, tid(0), args.c_str());
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": \"dispatch\", \"ph\": \"i\", \"s\": \"t\", \"ts\": %s, \"pid\": %lld, "
                 "\"tid\": %lld, \"args\": %s}", name.c_str(), ts(1).c_str(), pid, tid(1), args.c_str());
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": \"run\", \"ph\": \"X\", \"ts\": %s, \"dur\": %s, \"pid\": %lld, "
                 "\"tid\": %lld, \"args\": %s}", name.c_str(), ts(2).c_str(),
                 micros(s->event[3]->ns - s->event[2]->ns).c_str(), pid, tid(2), args.c_str());
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": \"flow\", \"ph\": \"s\", \"id\": %llu, \"ts\": %s, \"pid\": %lld, "
                 "\"tid\": %lld}", name.c_str(), static_cast<unsigned long long>(id), ts(0).c_str(), pid, tid(0));
    std::fprintf(f, ",\n{\"name\": %s, \"cat\": \"flow\", \"ph\": \"f\", \"bp\": \"e\", \"id\": %llu, \"ts\": %s, "
                 "\"pid\": %lld, \"tid\": %lld}", name.c_str(), static_cast<unsigned long long>(id), ts(2).c_str(),
                 pid, tid(2));
  }
  std::fprintf(f, "\n]}\n");
  bool ok = std::ferror(f) == 0;
  ok &= std::fclose(f) == 0;
  RILL_CHECK(ok, Runtime, "[vm_trace] writing the trace to ", path, " failed: ", std::strerror(errno));
  return static_cast<int64_t>(complete.size());
}

void finish_env_at_exit() {
  // A C++ program's exit (Python's atexit hook gets there first: rill._C._shutdown).
  try {
    if (!recording()) return;
    drain();
    finish_env();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill: %s\n", e.what());
  }
}

}  // namespace

void record_submit(Instruction& instr) {
  instr.trace_id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  append(Event::kSubmit, instr);
}

void record(Event event, const Instruction& instr) { append(event, instr); }

namespace {
void start_recording(const std::string& path, bool from_env) {
  register_fork_handler();
  RILL_CHECK(!path.empty(), Value, "[vm_trace] needs a file path to write the trace to");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  RILL_CHECK(!recording(), Runtime, "[vm_trace] a trace is already recording to ", s.path,
             "; traces do not nest: leave the other rill.vm_trace() block (or unset RILL_VM_TRACE) first");
  std::FILE* f = std::fopen(path.c_str(), "w");  // fail now rather than after the run
  RILL_CHECK(f, Runtime, "[vm_trace] can't write the trace to ", path, ": ", std::strerror(errno));
  std::fclose(f);
  for (auto& log : s.logs) {
    std::lock_guard<std::mutex> g(log->mutex);
    log->records.clear();
  }
  s.path = path;
  s.from_env = from_env;
  s.first_id = g_next_id.load(std::memory_order_relaxed);
  s.start_ns = now_ns();
  detail::g_recording.store(true, std::memory_order_release);
}
}  // namespace

void start(const std::string& path) { start_recording(path, false); }

int64_t stop() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!recording()) return 0;
  detail::g_recording.store(false, std::memory_order_relaxed);
  s.from_env = false;
  std::vector<std::vector<Record>> taken(s.logs.size());
  for (size_t k = 0; k < s.logs.size(); ++k) {
    std::lock_guard<std::mutex> g(s.logs[k]->mutex);
    taken[k].swap(s.logs[k]->records);
  }
  return write_trace(s.path, s.logs, taken, s.first_id, s.start_ns);
}

bool active() { return recording(); }

size_t buffered() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  size_t n = 0;
  for (auto& log : s.logs) {
    std::lock_guard<std::mutex> g(log->mutex);
    n += log->records.size();
  }
  return n;
}

void start_from_env() {
  if (state().env_disabled || recording()) return;
  auto path = env::get_string("RILL_VM_TRACE");
  if (!path) return;
  try {
    start_recording(*path, true);
  } catch (const Error& e) {
    // The VM starts at the first op: a bad knob must not make every op fail.
    std::fprintf(stderr, "rill: RILL_VM_TRACE: %s; no trace is recorded\n", e.what());
    state().env_disabled = true;
    return;
  }
  static const bool registered = [] {
    std::atexit(finish_env_at_exit);
    return true;
  }();
  (void)registered;
}

void finish_env() {
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.from_env || !recording()) return;
  }
  stop();
}

}  // namespace rill::vm::trace
