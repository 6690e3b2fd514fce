#include "rill/vm/instruction.h"

#include "rill/vm/virtual_machine.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>

namespace rill::vm {
namespace {
std::atomic<LocationCapture> g_capture{nullptr};
std::atomic<LocationFormatter> g_format{nullptr};

void fill_args(const std::vector<Tensor>& tensors, TensorArg* out) {
  for (size_t i = 0; i < tensors.size(); ++i) out[i] = {tensors[i].data_ptr(), tensors[i].meta().get()};
}
}  // namespace

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
  error.reset();
}

std::string describe_failure(const Instruction& instruction, const char* what) {
  std::ostringstream os;
  os << what << "\n  (raised while running '" << (instruction.op ? instruction.op->name : "?") << "' on inputs [";
  for (size_t i = 0; i < instruction.inputs.size(); ++i) os << (i ? ", " : "") << instruction.inputs[i].meta()->str();
  os << "]";
  LocationFormatter f = g_format.load(std::memory_order_acquire);
  if (f && instruction.location.code) {
    std::string where = f(instruction.location);
    if (!where.empty()) os << ", issued at " << where;
  }
  os << ")";
  return os.str();
}

void Instruction::run_or_throw() const {
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
  kernel(ctx);
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
      error = std::make_shared<const Error>(e.kind(), describe_failure(*this, e.what()));
    } catch (const std::bad_alloc&) {
      error = std::make_shared<const Error>(ErrorKind::kRuntime, describe_failure(*this, "out of memory"));
    } catch (const std::exception& e) {
      error = std::make_shared<const Error>(ErrorKind::kRuntime, describe_failure(*this, e.what()));
    }
  }
  for (const Tensor& t : outputs) t.storage()->set_poison(error);
  record_error(error);
}

}  // namespace rill::vm
