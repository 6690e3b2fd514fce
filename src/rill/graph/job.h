// A job or a plan and the protobuf arena its messages live on: what the tracer makes and a compiled graph keeps.
#pragma once

#include <memory>
#include <utility>

#include <google/protobuf/arena.h>

#include "rill/graph/job.pb.h"
#include "rill/graph/plan.pb.h"

namespace rill::graph {

// Note [The job on an arena]
// A 48-block job has ten thousand ops, each a message with strings, a map of attrs and output descs. Made on
// the heap one allocation at a time, they scatter over tens of megabytes, and every pass walks them all: at
// that size a pass waits on cache misses more than it works, so its time per op grew with the job (each pass
// 1.5-2x slower per op at 48 blocks than at 24). On an arena the tracer's ops lie one after another in large
// blocks, in the order the passes walk them, and what the passes add is a pointer bump, not a malloc. The
// arena lives as long as the job: the memory of an op a pass removes comes back with the job's, not before.
// The compiler makes its plan on an arena too, which the memory plan and the runtime's checks and actors walk.
// protobuf's arena changes its layout under ThreadSanitizer (port_def.inc's PROTOBUF_TSAN) and the system's
// libprotobuf is built without it, so the TSan build (scripts/tsan.sh) keeps these messages on the heap.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kMessagesOnArenas = false;
#else
inline constexpr bool kMessagesOnArenas = true;
#endif

template <typename M>
class OnArena {
 public:
  OnArena()
      : arena_(kMessagesOnArenas ? std::make_unique<google::protobuf::Arena>(options()) : nullptr),
        message_(google::protobuf::Arena::CreateMessage<M>(arena_.get())) {}
  /** A copy of m on an arena of its own. */
  OnArena(const M& m) : OnArena() { *message_ = m; }  // NOLINT: a plan made by hand converts (tests)
  OnArena(OnArena&& o) noexcept : arena_(std::move(o.arena_)), message_(std::exchange(o.message_, nullptr)) {}
  OnArena& operator=(OnArena&& o) noexcept {
    if (this != &o) {
      release();
      arena_ = std::move(o.arena_);
      message_ = std::exchange(o.message_, nullptr);
    }
    return *this;
  }
  ~OnArena() { release(); }

  M& operator*() const { return *message_; }
  M* operator->() const { return message_; }

 private:
  static google::protobuf::ArenaOptions options() {
    google::protobuf::ArenaOptions o;
    o.start_block_size = 64 << 10;  // a small job's ops in one or two blocks
    o.max_block_size = 1 << 20;     // growing to 1 MiB blocks for a large one
    return o;
  }

  /** Free the message when it is on the heap (on an arena, the arena's end frees it). */
  void release() {
    if (!arena_) delete message_;
    message_ = nullptr;
  }

  std::unique_ptr<google::protobuf::Arena> arena_;  // moved with the message: its parts stay where they are
  M* message_;
};

/** The traced job, which the passes rewrite and a compiled graph keeps. */
using ArenaJob = OnArena<Job>;
/** The compiled plan, which the runtime walks: its ten thousand tasks and registers in order too. */
using ArenaPlan = OnArena<plan::Plan>;

}  // namespace rill::graph
