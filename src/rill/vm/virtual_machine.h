// The VM facade (docs/architecture.md §3): client threads submit instructions and return
// at once; a scheduler thread orders them by their data dependences and runs
// them; clients wait only at sync points. RILL_VM_MULTI_THREAD=0 runs every
// instruction on the submitting thread instead (errors then come from the line
// that caused them).
#pragma once

#include <chrono>
#include <memory>

#include "rill/vm/instruction.h"

namespace rill::vm {

/** Hand an instruction to the VM (takes ownership). May block under back-pressure. Raises when
 * a tensor it touches lost its value to an unsynchronised fork (Note [Fork] in fork.cpp). */
void submit(std::unique_ptr<Instruction> instruction);

/** Start reading t's only element into dst (16 bytes, aligned). Returns null when the value
 * was read at once (its producer had finished); else the signal of this thread's reused
 * SyncRead marker: wait for it, then call finish_read(dst). Allocates nothing once warm. */
SyncSignal* submit_read(const Tensor& t, void* dst);
/** Copy the value a finished submit_read fetched into dst; raises if the tensor is poisoned. */
void finish_read(void* dst);
/** In a forked child: free the calling thread's SyncRead markers still queued in the parent's VM. */
void forget_reads_after_fork();

/** Record the stamps of this thread's SyncReads into *times (null stops). */
void profile_reads(ReadTimes* times);

/** Submit a sync marker that completes once tensors are written (all: once every earlier
 * instruction has finished too). Returns the signal to wait on. */
std::shared_ptr<SyncSignal> submit_sync(const std::vector<Tensor>& tensors, bool all);

/** One poll of a client waiting at a sync point since waiting_since_ns (now_ns()): run the queued work on this
 * thread when the scheduler thread, or the worker this thread submits to, is not running it (Note [A waiter runs
 * the queue] in scheduler.cpp), else
 * help a parallel region, else pause (within the grace) or yield. True if it ran anything. */
bool wait_turn(int64_t waiting_since_ns);

/** Wait up to timeout for signal; true when it is done. */
bool wait_for(SyncSignal& signal, std::chrono::microseconds timeout);

/** Raise the error recorded in a done signal, if any. */
void check(const SyncSignal& signal);

/** Wait until every submitted instruction has finished; raises the first kernel error not yet reported. */
void synchronize();

/** Wait until every submitted instruction has finished, raising nothing (errors stay unreported). */
void drain();

/** drain(), without passing through an odb anchor: for the fork handler (Note [odb anchors] in trace.h). */
void drain_unanchored();

/** Null when t can be read on the host now (its writers finished; raises if t is poisoned);
 * else the signal of a sync marker to wait on, then check(). */
std::shared_ptr<SyncSignal> submit_readable(const Tensor& t);

/** Wait until t's value can be read on the host; raises if t is poisoned. */
void wait_readable(const Tensor& t);

/** Raise (and forget) the first kernel error since the last call, if any. */
void raise_unreported_error();

/** Record a kernel error for raise_unreported_error (called by Instruction::run). */
void record_error(const std::shared_ptr<const Error>& error);

/** Hook running fn(ctx) with the caller's interpreter lock released (installed by the binding). */
using UnlockedRunner = void (*)(void (*fn)(void*), void* ctx);
/** Install the hook used when a client blocks under back-pressure. */
void set_unlocked_runner(UnlockedRunner runner);

/** The VM thread id this client thread submits to (0 unless inside rill.asyncs.thread). */
int current_thread_id();
/** Send this client thread's instructions to thread id (0 or a reserved id). */
void set_current_thread_id(int thread_id);
/** Reserve the lowest free VM thread id above 0; raises when RILL_VM_WORKER_THREAD_LIMIT are taken. */
int reserve_thread_id();
/** Free a reserved id (its worker stays; instructions already sent to it still run). */
void release_thread_id(int thread_id);

/** Number of instructions submitted since start (for tests and benchmarks). */
uint64_t num_submitted();
/** Batches a client thread ran in the scheduler's place (Note [A waiter runs the queue] in scheduler.cpp). */
uint64_t num_waiter_batches();
/** Batches of a worker's queue a client thread ran in the worker's place (the same Note). */
uint64_t num_waiter_worker_batches();
/** Times the scheduler thread, waiting for a core, left the queued work to the clients (Note [Waiting for a core]
 * in scheduler.cpp). */
uint64_t num_scheduler_deferrals();
/** Comm-stream completions left to a polling client or the scheduler's deadline instead of waking the scheduler
 * (Note [The comm stream's hand-offs] in scheduler.cpp). */
uint64_t num_comm_completions_left();
/** Instructions submitted and not yet finished. */
int64_t num_in_flight();

}  // namespace rill::vm
