// An instruction: one kernel call with the tensors it reads and writes
// (docs/architecture.md §2 step 5), or a sync marker a client thread waits on. It owns its
// operands (shared references) until it retires, so Python may drop a tensor
// while the instruction is queued.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"
#include "rill/vm/stream.h"

namespace rill::vm {

/** Where the user issued an instruction: an opaque (code object, bytecode offset) pair
 * from the binding's capture hook, turned into "file:line" only when an error is reported. */
struct SourceLocation {
  const void* code = nullptr;
  int offset = -1;
};

/** Clock stamps (steady_clock, ns) of one SyncRead, for the item() breakdown in bench/. */
struct ReadTimes {
  int64_t enter = 0, submitted = 0, ready = 0, done = 0;
};

/** Now on the steady clock, in nanoseconds. */
int64_t now_ns();

/** What a client thread waits on at a sync point, in two stages (Note [Blocking then busy]
 * in virtual_machine.cpp): ready (its dependences are met, it is about to run) and done. */
struct SyncSignal {
  std::atomic<bool> ready{false};
  std::atomic<bool> done{false};
  std::atomic<bool> blocked{false};  // a waiter sleeps on cv: the VM must wake it
  std::atomic<bool> retired{true};   // the scheduler is done with the marker (done may come first: Note [Markers on a worker])
  std::mutex mutex;
  std::condition_variable cv;
  std::shared_ptr<const Error> error;  // poison found on the awaited tensors, if any
  /** Mark ready; wakes a blocked waiter (it then spins for done). */
  void notify_ready();
  /** Mark done; wakes a blocked waiter. After this the VM no longer touches the marker. */
  void notify_done();
  /** Mark retired: the scheduler's last touch of the marker. */
  void notify_retired() { retired.store(true, std::memory_order_release); }
  /** Make a finished signal reusable. */
  void reset();
};

/** Work a kernel started that ends after the kernel returns (an MPI request): the instruction completes only
 * once poll() says so (Note [Kernels that finish later] in worker.cpp). */
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  /** True once the work is done; throws rill::Error if it failed. Called on the thread that ran the kernel. */
  virtual bool poll() = 0;
};

/** Called by a running kernel: its instruction completes when work is done, not when the kernel returns. */
void finish_later(std::unique_ptr<PendingWork> work);

/** A kernel call, or a sync marker. */
struct Instruction {
  /** kKernel runs a kernel; kSync completes its signal once its inputs are written;
   * kSyncRead does too, after copying its one input's single element to read_value. */
  enum class Kind : uint8_t { kKernel, kSync, kSyncRead };

  Kind kind = Kind::kKernel;
  const OpSchema* op = nullptr;
  KernelFn kernel = nullptr;
  Stream stream;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  AttrsSym attrs;
  std::vector<Scalar> scalars;
  SourceLocation location;
  std::shared_ptr<SyncSignal> signal;  // kSync only
  bool sync_all = false;               // kSync: also wait for every earlier instruction
  bool reusable = false;               // owned by a client thread: retired, not deleted (Note [Reused SyncRead])
  bool on_worker = false;              // a marker the worker of stream.thread_id completes (Note [Markers on a worker])
  alignas(16) unsigned char read_value[16] = {};  // kSyncRead: the element read
  ReadTimes* times = nullptr;                      // kSyncRead: stamps to fill, when profiling
  uint64_t trace_id = 0;                           // its id in the VM trace; 0 when not traced (trace.h)
  std::unique_ptr<PendingWork> pending_work;       // set by finish_later: the kernel's work is still going on

  // Scheduler bookkeeping (Note [Dependences] in dependence.h); touched by the scheduler thread only.
  int pending = 0;                        // unfinished predecessors that must complete first
  std::vector<Instruction*> successors;  // instructions waiting on this one

  /** True for the markers clients wait on (kSync, kSyncRead). */
  bool is_sync() const { return kind != Kind::kKernel; }
  /** Run on this thread. A kernel error poisons the outputs instead of escaping
   * (Note [Errors inside the VM]); a poisoned input poisons the outputs without running.
   * A marker records the poison of its inputs on its signal (the VM then completes it). */
  void run() noexcept;
  /** Run on this thread, letting a kernel error escape (synchronous mode). */
  void run_or_throw();
  /** For a kernel that called finish_later: true once its work is done (poisoning the outputs if it failed),
   * after which pending_work is gone. */
  bool poll_pending() noexcept;
  /** True if this instruction and other touch a common storage that one of them writes. */
  bool conflicts_with(const Instruction& other) const;
};

/** An empty kernel instruction, from the calling thread's pool when it has one (Note [Instruction pool]).
 * Hand it to submit(); if it is dropped instead, `delete` frees it. */
std::unique_ptr<Instruction> new_instruction();
/** Empty a client-owned read marker (Note [Reused SyncRead]) for its next read, keeping its vectors' capacity. */
void empty_read_marker(Instruction* marker);
/** Release a retired instruction's operands and keep it, with its vectors' capacity, for new_instruction(). */
void recycle(Instruction* instruction);

/** The message of a kernel error: the op, its inputs' metas and where it was issued. */
std::string describe_failure(const Instruction& instruction, const char* what);

/** Hook that turns a SourceLocation into "file:line" (installed by the Python binding). */
using LocationFormatter = std::string (*)(SourceLocation);
/** Hook that captures the caller's SourceLocation (installed by the Python binding). */
using LocationCapture = SourceLocation (*)();
/** Install the location hooks. */
void set_location_hooks(LocationCapture capture, LocationFormatter format);
/** The calling thread's current source location (empty without a hook). */
SourceLocation capture_location();
/** location as "file:line", or empty (no hook, no location). */
std::string location_str(SourceLocation location);

}  // namespace rill::vm
