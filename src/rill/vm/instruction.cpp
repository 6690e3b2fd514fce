#include "rill/vm/instruction.h"

#include "rill/vm/virtual_machine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>

#include "rill/util/fork.h"

namespace rill::vm {
namespace {
std::atomic<LocationCapture> g_capture{nullptr};
std::atomic<LocationFormatter> g_format{nullptr};

void fill_args(const std::vector<Tensor>& tensors, TensorArg* out) {
  for (size_t i = 0; i < tensors.size(); ++i) out[i] = {tensors[i].data_ptr(), tensors[i].meta().get()};
}
}  // namespace

// Note [Instruction pool]
// An op's instruction is built on the client thread and retired on the scheduler
// thread. Allocated with new and freed with delete, each one cost four mallocs
// (the instruction and its operand vectors) on one thread and four cross-thread
// frees on the other, more than the rest of the hand-off. Retired instructions
// are instead emptied (their operands released, their vectors' capacity kept)
// and cached: each thread keeps a small cache, and moves batches of kBatch to or
// from a global list under one mutex, so the scheduler's retired instructions
// flow back to the clients that build new ones with a lock taken once per batch.
// The global list is bounded; past kMaxPooled instructions are deleted. The
// mutex is held across fork() (util/fork.h): a child inherits a consistent list.
namespace {

constexpr size_t kBatch = 64;
constexpr size_t kMaxPooled = 16384;

struct GlobalPool {
  std::mutex mutex;
  std::vector<Instruction*> free;
};

GlobalPool& global_pool() {
  static GlobalPool* pool = [] {
    auto* p = new GlobalPool();  // leaked: threads may recycle during static destruction
    fork::guard_mutex(&p->mutex);
    return p;
  }();
  return *pool;
}

struct LocalPool {
  std::vector<Instruction*> free;
  LocalPool() { free.reserve(2 * kBatch); }
  ~LocalPool() {
    GlobalPool& g = global_pool();
    std::lock_guard<std::mutex> lock(g.mutex);
    for (Instruction* i : free) {
      if (g.free.size() < kMaxPooled) {
        g.free.push_back(i);
      } else {
        delete i;
      }
    }
  }
};

LocalPool& local_pool() {
  thread_local LocalPool pool;
  return pool;
}

}  // namespace

std::unique_ptr<Instruction> new_instruction() {
  LocalPool& local = local_pool();
  if (local.free.empty()) {
    GlobalPool& g = global_pool();
    std::lock_guard<std::mutex> lock(g.mutex);
    size_t n = std::min(kBatch, g.free.size());
    local.free.insert(local.free.end(), g.free.end() - static_cast<std::ptrdiff_t>(n), g.free.end());
    g.free.resize(g.free.size() - n);
  }
  if (local.free.empty()) return std::make_unique<Instruction>();
  Instruction* i = local.free.back();
  local.free.pop_back();
  return std::unique_ptr<Instruction>(i);
}

void empty_read_marker(Instruction* marker) {
  marker->inputs.clear();  // keeps capacity: the next read allocates nothing
  marker->successors.clear();
  marker->trace_id = 0;  // the next read is traced only if a trace records then
  marker->on_worker = false;
  marker->stream = Stream{};
}

void recycle(Instruction* i) {
  i->kind = Instruction::Kind::kKernel;
  i->op = nullptr;
  i->kernel = nullptr;
  i->stream = Stream{};
  i->inputs.clear();  // releases the operands: memory dropped by Python returns to the allocator here
  i->outputs.clear();
  i->attrs = AttrsSym{};
  i->scalars.clear();
  i->location = SourceLocation{};
  i->signal.reset();
  i->sync_all = false;
  i->reusable = false;
  i->on_worker = false;
  i->times = nullptr;
  i->trace_id = 0;
  i->pending_work.reset();
  i->pending = 0;
  i->successors.clear();
  LocalPool& local = local_pool();
  local.free.push_back(i);
  if (local.free.size() < 2 * kBatch) return;
  GlobalPool& g = global_pool();
  std::lock_guard<std::mutex> lock(g.mutex);
  for (size_t k = 0; k < kBatch; ++k) {
    Instruction* spill = local.free.back();
    local.free.pop_back();
    if (g.free.size() < kMaxPooled) {
      g.free.push_back(spill);
    } else {
      delete spill;
    }
  }
}

void set_location_hooks(LocationCapture capture, LocationFormatter format) {
  g_capture.store(capture, std::memory_order_release);
  g_format.store(format, std::memory_order_release);
}

SourceLocation capture_location() {
  LocationCapture c = g_capture.load(std::memory_order_acquire);
  return c ? c() : SourceLocation{};
}

// seq_cst on ready/done and blocked: either the waiter sees the flag, or the VM sees
// blocked and wakes it (Note [Blocking then busy] in virtual_machine.cpp).
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SyncSignal::notify_ready() {
  ready.store(true, std::memory_order_seq_cst);
  if (blocked.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(mutex);  // the waiter is inside cv.wait or about to re-check
    cv.notify_all();
  }
}

void SyncSignal::notify_done() {
  done.store(true, std::memory_order_seq_cst);  // also releases the awaited writes to the reader
  if (blocked.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(mutex);
    cv.notify_all();
  }
}

void SyncSignal::reset() {
  ready.store(false, std::memory_order_relaxed);
  done.store(false, std::memory_order_relaxed);
  retired.store(false, std::memory_order_relaxed);
  error.reset();
}

std::string location_str(SourceLocation location) {
  LocationFormatter f = g_format.load(std::memory_order_acquire);
  return f && location.code ? f(location) : std::string();
}

std::string describe_failure(const Instruction& instruction, const char* what) {
  std::ostringstream os;
  os << what << "\n  (raised while running '" << (instruction.op ? instruction.op->name : "?") << "' on inputs [";
  for (size_t i = 0; i < instruction.inputs.size(); ++i) os << (i ? ", " : "") << instruction.inputs[i].meta()->str();
  os << "]";
  std::string where = location_str(instruction.location);
  if (!where.empty()) os << ", issued at " << where;
  os << ")";
  return os.str();
}

namespace {
// The instruction whose kernel runs on this thread, for finish_later.
thread_local Instruction* t_running = nullptr;

struct RunningScope {
  Instruction* saved;
  explicit RunningScope(Instruction* i) : saved(t_running) { t_running = i; }
  ~RunningScope() { t_running = saved; }
};

std::shared_ptr<const Error> failure(const Instruction& i, ErrorKind kind, const char* what) {
  return std::make_shared<const Error>(kind, describe_failure(i, what));
}
}  // namespace

void finish_later(std::unique_ptr<PendingWork> work) {
  RILL_ASSERT(t_running != nullptr, "finish_later called outside a kernel");
  t_running->pending_work = std::move(work);
}

void Instruction::run_or_throw() {
  constexpr size_t kInline = 8;
  TensorArg in_buf[kInline], out_buf[kInline];
  std::vector<TensorArg> in_heap, out_heap;
  TensorArg* in = in_buf;
  TensorArg* out = out_buf;
  if (inputs.size() > kInline) {
    in_heap.resize(inputs.size());
    in = in_heap.data();
  }
  if (outputs.size() > kInline) {
    out_heap.resize(outputs.size());
    out = out_heap.data();
  }
  fill_args(inputs, in);
  fill_args(outputs, out);
  KernelContext ctx{*op, {in, inputs.size()}, {out, outputs.size()}, *attrs, scalars};
  RunningScope scope(this);
  kernel(ctx);
}

bool Instruction::poll_pending() noexcept {
  std::shared_ptr<const Error> error;
  try {
    if (!pending_work->poll()) return false;
  } catch (const Error& e) {
    error = failure(*this, e.kind(), e.what());
  } catch (const std::exception& e) {
    error = failure(*this, ErrorKind::kRuntime, e.what());
  }
  pending_work.reset();
  if (error) {
    for (const Tensor& t : outputs) t.storage()->set_poison(error);
    record_error(error);
  }
  return true;
}

bool Instruction::conflicts_with(const Instruction& other) const {
  auto touches = [](const std::vector<Tensor>& ts, const Storage* s) {
    for (const Tensor& t : ts)
      if (t.storage().get() == s) return true;
    return false;
  };
  for (const Tensor& t : outputs)
    if (touches(other.inputs, t.storage().get()) || touches(other.outputs, t.storage().get())) return true;
  for (const Tensor& t : inputs)
    if (touches(other.outputs, t.storage().get())) return true;
  return false;
}

// Note [Errors inside the VM]
// A kernel that fails does not take the VM down: its error (kind kept, message
// extended with the op, its input metas and the Python line that issued it)
// poisons the storages it writes. An instruction that reads a poisoned storage
// does not run and passes the same error on to its outputs, so everything
// computed from a failure is poisoned and nothing else is. The error surfaces at
// the next sync point that touches a poisoned tensor (SyncSignal::error).
void Instruction::run() noexcept {
  if (is_sync()) {
    for (const Tensor& t : inputs) {
      if (t.storage()->poison()) {
        signal->error = t.storage()->poison();
        return;
      }
    }
    if (kind == Kind::kSyncRead) std::memcpy(read_value, inputs[0].data_ptr(), dtype_itemsize(inputs[0].dtype()));
    return;
  }
  std::shared_ptr<const Error> error;
  for (const Tensor& t : inputs) {
    if (t.storage()->poison()) {
      error = t.storage()->poison();
      break;
    }
  }
  if (!error) {
    try {
      run_or_throw();
      return;
    } catch (const Error& e) {
      error = failure(*this, e.kind(), e.what());
    } catch (const std::bad_alloc&) {
      error = failure(*this, ErrorKind::kRuntime, "out of memory");
    } catch (const std::exception& e) {
      error = failure(*this, ErrorKind::kRuntime, e.what());
    }
    pending_work.reset();  // a kernel that failed after starting work has none to finish
  }
  for (const Tensor& t : outputs) t.storage()->set_poison(error);
  record_error(error);
}

}  // namespace rill::vm
