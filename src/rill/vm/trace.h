// What the VM shows a debugger and a timeline (docs/architecture.md §7): the odb anchors
// and the trace recorder.
//
// Note [odb anchors]
// Each profiled range of the VM calls an empty function named after the kind of
// thread it runs on: rill_odb_anchor_client (op submission, sync-read, the read's
// return), rill_odb_anchor_scheduler (scheduling, dispatch, an inline kernel run,
// release) and rill_odb_anchor_worker (a kernel run on a worker). They have C
// linkage and default visibility, so `break rill_odb_anchor_scheduler` works on
// a stripped Release build, and they are defined in trace.cpp, never inlined,
// with an asm volatile body, so the compiler keeps every call: off a debugger
// each costs one call and return. The arguments (the range, the instruction)
// are what tools/odb/odb.py prints at a stop; the frame worth reading is the
// caller's, which odb selects.
//
// The fork handlers never pass through an anchored range (Note [Fork] in
// fork.cpp: the prepare handler drains through drain_unanchored()), so a
// breakpoint on an anchor never stops a thread inside fork().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/vm/instruction.h"

namespace rill::vm {

/** The VM's profiled ranges: each passes its own to its thread kind's anchor. */
enum class Range : int {
  kSubmit = 0,    // client: an instruction is handed to the VM
  kSyncRead = 1,  // client: item() starts a read (instruction null when it reads at once)
  kReadDone = 2,  // client: the value of a queued read is back
  kSchedule = 3,  // scheduler: an instruction is admitted (its dependences linked)
  kDispatch = 4,  // scheduler: an instruction's dependences are met; it goes to its thread
  kRun = 5,       // scheduler (inline) or worker: a kernel or a sync marker runs
  kRelease = 6,   // scheduler: a finished instruction retires and drops its operands
  kRunEnd = 7,    // scheduler or worker: a kernel finished (the trace's end event; no anchor stops here)
};

}  // namespace rill::vm

extern "C" {
/** Anchor of client threads (Note [odb anchors]). */
[[gnu::visibility("default")]] void rill_odb_anchor_client(rill::vm::Range range,
                                                            const rill::vm::Instruction* instruction);
/** Anchor of the scheduler thread. */
[[gnu::visibility("default")]] void rill_odb_anchor_scheduler(rill::vm::Range range,
                                                               const rill::vm::Instruction* instruction);
/** Anchor of worker threads. */
[[gnu::visibility("default")]] void rill_odb_anchor_worker(rill::vm::Range range,
                                                            const rill::vm::Instruction* instruction);
/** Called by rill.odb.breakpoint(tensor): a place for a debugger to stop (tensor_impl may be null). */
[[gnu::visibility("default")]] void rill_odb_breakpoint(const void* tensor_impl);
}

namespace rill::vm::trace {

/** An instruction's events, in the order they happen. */
enum class Event : uint8_t { kSubmit, kDispatch, kStart, kEnd };

namespace detail {
extern std::atomic<bool> g_recording;
}  // namespace detail

/** True while a trace records: one relaxed load, all tracing costs at a submission when off. */
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }

/** Record a submission (client thread, before the scheduler can see the instruction); gives it a trace id. */
void record_submit(Instruction& instruction);
/** Record a later event of a traced instruction (trace_id != 0), on the calling thread's buffer. */
void record(Event event, const Instruction& instruction);

/** The kinds of VM thread, each with its own odb anchor. */
enum class Thread : uint8_t { kClient, kScheduler, kWorker };

/** The one observer hook of the VM: a thread reached range of instruction's life. It calls the thread kind's
 * odb anchor (Note [odb anchors]) and records the trace event the range stands for, if the instruction is
 * traced: a dispatch (kDispatch), a start (kRun) or an end (kRunEnd, which has no anchor). A submission is
 * recorded by record_submit, which gives the instruction its trace id. */
inline void observe(Thread thread, Range range, const Instruction* instruction) {
  if (range != Range::kRunEnd) {
    switch (thread) {
      case Thread::kClient: rill_odb_anchor_client(range, instruction); break;
      case Thread::kScheduler: rill_odb_anchor_scheduler(range, instruction); break;
      case Thread::kWorker: rill_odb_anchor_worker(range, instruction); break;
    }
  }
  if (instruction == nullptr || instruction->trace_id == 0) [[likely]]
    return;
  switch (range) {
    case Range::kDispatch: record(Event::kDispatch, *instruction); break;
    case Range::kRun: record(Event::kStart, *instruction); break;
    case Range::kRunEnd: record(Event::kEnd, *instruction); break;
    default: break;
  }
}

/** Start recording into path (written by stop()); raises when a trace is already recording. */
void start(const std::string& path);
/** Stop recording and write the trace (Chrome trace-event JSON) of every instruction whose four
 * events were recorded; returns the number of instructions written. Raises if the file can't be written. */
int64_t stop();
/** True while a trace records (for the bindings). */
bool active();
/** Events buffered and not yet written (for tests: 0 between traces). */
size_t buffered();
/** Start the trace RILL_VM_TRACE names, if any and none records (the VM calls this when it starts). */
void start_from_env();
/** Stop and write the trace RILL_VM_TRACE started, if it still records (at exit, after a drain). */
void finish_env();

}  // namespace rill::vm::trace
