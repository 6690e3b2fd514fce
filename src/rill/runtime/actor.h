// Private to runtime/: the actor of one plan task and the register table it
// reads (Note [Actors] in runtime.cpp). An actor is a state machine fed with
// messages; it never blocks and never touches another actor's state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/core/tensor_meta.h"
#include "rill/ops/op_schema.h"
#include "rill/graph/plan.pb.h"
#include "rill/runtime/runtime.h"
#include "rill/util/error.h"
#include "rill/util/fifo.h"

namespace rill::runtime::detail {

/** Where a register's piece goes: a consumer actor and the in-slot of that actor reading it. */
struct Route {
  int32_t actor = 0;
  int32_t slot = 0;
};

/** A plan register as the runtime uses it (indices instead of ids, memory resolved). */
struct RegstInfo {
  const plan::Regst* proto = nullptr;
  plan::RegstKind kind = plan::REGST_OWNED;
  int32_t count = 1;
  MetaSym meta;                  // null for REGST_CTRL
  int64_t bytes = 0;             // one buffer: the span of meta's elements
  int32_t producer = -1;         // actor index; -1: ready from the start of an iteration (Note [Actors])
  int32_t producer_slot = -1;    // its out-slot in the producer
  std::vector<Route> consumers;  // one per occurrence in a task's in_regsts
  char* memory = nullptr;        // REGST_OWNED: buffer 0
  int32_t alias = -1;            // REGST_VIEW: the register it views
  int64_t view_offset_bytes = 0; // REGST_VIEW: from the element 0 of alias
  /** 'lbn' (or "register <id>") for messages. */
  std::string name() const;
};

/** A message between actors: a piece of a register is ready (producer to consumer), a piece's buffer is free
 * again (consumer to producer), or the start of an iteration. */
struct Message {
  enum class Kind : uint8_t { kStart, kReady, kFree };
  Kind kind = Kind::kStart;
  int32_t actor = 0;     // the receiver
  int32_t slot = 0;      // kReady: the receiver's in-slot; kFree: its out-slot
  int64_t seq = 0;       // the piece: its number in the register this iteration
  char* data = nullptr;  // kReady: element 0 of the piece (null in a dry run or after an error)
};

/** What an actor sees of the runtime while it handles a message. */
class ActorEnv {
 public:
  /** Queue m for its receiver. */
  virtual void send(const Message& m) = 0;
  /** False in the construction's dry run and once a kernel has failed this iteration: acts skip their work. */
  virtual bool computing() const = 0;
  /** Keep e as the iteration's error (the first one wins) and stop computing. */
  virtual void fail(const Error& e) = 0;
  /** The launch's bindings (read only while computing). */
  virtual const Bindings& bindings() const = 0;
  /** Count one act (not in the dry run). */
  virtual void count_act() = 0;
  /** True when the runtime records its kernels (Note [The actors' trace] in trace.cpp). */
  virtual bool tracing() const = 0;
  /** Record that the acting actor ran its kernel on piece from start_ns (vm::now_ns()) until now. */
  virtual void record_kernel(int64_t piece, int64_t start_ns) = 0;
  /** How many pieces of register regst its producer has made this iteration (a producer on the same thread). */
  virtual int64_t pieces_made(int32_t regst) const = 0;

 protected:
  ~ActorEnv() = default;
};

/** The data pointer of piece k of a register that is ready from the start (a variable, an input, a view of one). */
char* fixed_data(const std::vector<RegstInfo>& regsts, int32_t regst, const Bindings& b, int64_t k);

/** The actor of one task: consumes ready pieces of its in-registers, produces pieces of its out-registers,
 * acts_per_iteration times per iteration (Note [Actors] in runtime.cpp). */
class Actor {
 public:
  /** Prepare task's act (op, attrs, metas, kernel); raises RuntimeError naming the task for a bad task. ins and
   * outs are the indices in regsts of task's in_regsts and out_regsts; acts is how many times it acts per
   * iteration. */
  Actor(const plan::Task& task, const std::vector<RegstInfo>& regsts, std::vector<int32_t> ins,
        std::vector<int32_t> outs, int64_t acts);
  /** Forget the last iteration: nothing ready, every buffer free, no acts. */
  void reset();
  /** Take m and act as long as the actor can. */
  void handle(const Message& m, ActorEnv& env);
  /** Act once with no messages, in a plan run in order (Note [Plans run in order] in runtime.cpp): an input
   * another task produces is read at data[its register], which that task's act wrote; each output's data goes to
   * data[its register]. */
  void act_in_order(ActorEnv& env, std::vector<char*>& data);
  /** Acted acts_per_iteration times, and every piece it produced was freed. */
  bool finished() const;
  /** For deadlock reports: "'name' (2/4 acts) waits for ...". */
  std::string waiting_on() const;
  const plan::Task& task() const { return *task_; }
  /** Pieces of each out-register made / each in-register taken per iteration (for the plan's rate check). */
  int64_t pieces_out() const;
  int64_t pieces_in() const;
  /** Pieces of out-register slot made this iteration. */
  int64_t pieces_made(int32_t slot) const { return outs_[slot].produced; }
  /** TASK_SSP_PROXY: per piece of the last iteration, how many earlier pieces' updates its copy lacked; and the
   * most since the runtime was made (Note [SSP] in graph/passes/ssp.cpp). */
  const std::vector<int64_t>& staleness() const { return staleness_; }
  int64_t max_staleness() const { return max_staleness_; }

 private:
  struct Piece {
    int64_t seq;
    char* data;
  };
  struct InSlot {
    int32_t regst;
    bool fixed;                // ready from the start: no messages
    int32_t lag = 0;           // act k takes piece k - lag (Task.in_lags): ready starts with lag pieces of none
    Fifo<Piece> ready;   // pieces announced and not yet taken
    int64_t taken = 0;         // pieces taken this iteration (those of none included)
  };
  struct Held {
    int32_t in_slot;
    int64_t seq;
    int64_t release_at;  // the piece is freed once the out-slot has freed this many pieces
  };
  struct OutSlot {
    int32_t regst;
    int32_t views = -1;            // the in-slot whose memory this register points into (views, TASK_REPEAT)
    bool holds = false;            // that in-slot has a producer: its piece stays taken until this one is freed
    int64_t view_delta = 0;        // views: bytes from element 0 of the in-slot's piece
    bool bound = false;            // a variable written in place (an assign): its readers never wait for it
    int64_t produced = 0;
    int64_t freed = 0;             // pieces every consumer has freed (in order)
    std::vector<int32_t> unfreed;  // per buffer: consumers still reading its piece
    Fifo<Held> held;         // in-pieces kept alive by the pieces of this register
  };

  const RegstInfo& regst(int32_t i) const { return (*regsts_)[i]; }
  bool inputs_ready() const;
  bool outputs_free() const;
  bool step(ActorEnv& env);
  bool step_repeat(ActorEnv& env);
  bool step_acc(ActorEnv& env);
  /** TASK_DELAY: whether its next piece must wait for later ones (Note [The delay tick] in actor.cpp). */
  bool delaying() const;
  /** The piece the next kernel run computes: the act, or for an acc the input piece it sums. */
  int64_t piece() const { return kind_ == plan::TASK_ACC ? acts_ * repeat_ + sub_ : acts_; }
  char* in_data(const InSlot& in, const Bindings& b) const;
  char* out_data(const OutSlot& out, const Bindings& b) const;
  void compute(ActorEnv& env);
  void gather(ActorEnv& env);
  void produce(OutSlot& out, char* data, ActorEnv& env);
  void take_inputs(ActorEnv& env, int64_t hold_pieces);
  void advance(OutSlot& out, ActorEnv& env);
  void free_piece(const InSlot& in, int64_t seq, ActorEnv& env);
  void prepare_outputs();
  void prepare_compute();
  void prepare_copy();
  void prepare_args();
  void prepare_ssp_proxy();
  void record_staleness(ActorEnv& env);
  Error task_error(const std::exception& e, ErrorKind kind) const;
  [[noreturn]] void fail_plan(const std::string& why) const;

  const plan::Task* task_;
  plan::TaskKind kind_;  // task_->kind(), kept beside the actor's state: the plan is elsewhere in memory
  const std::vector<RegstInfo>* regsts_;
  int64_t acts_per_iteration_ = 1;
  int64_t repeat_ = 1;
  int64_t delay_ = 0;  // TASK_DELAY: pieces each piece waits for
  std::vector<InSlot> ins_;
  std::vector<OutSlot> outs_;
  // The act's work: the kernel, its arguments, and the data slots (ins_/outs_ indices) it reads and writes.
  const OpSchema* op_ = nullptr;
  KernelFn kernel_ = nullptr;
  KernelFn add_kernel_ = nullptr;  // TASK_ACC: pieces after the first
  const OpSchema* add_op_ = nullptr;
  AttrsSym attrs_;
  std::vector<Scalar> scalars_;
  std::vector<int32_t> data_ins_, data_outs_;
  std::vector<MetaSym> in_metas_, out_metas_;
  std::vector<TensorArg> in_args_, out_args_;
  std::vector<Scalar> launch_scalars_;  // scalars_ with a random task's seed and offset for this launch
  std::vector<char*> cur_in_, cur_out_; // the act's data, per slot
  // Per iteration.
  int64_t acts_ = 0;
  int64_t waiting_ins_ = 0;    // in-slots with a producer and no piece ready: a sink tick has thousands, so
                               // inputs_ready() keeps this count rather than looking at each
  int64_t sub_ = 0;            // TASK_REPEAT: pieces still to produce from the held input; TASK_ACC: pieces summed
  char* repeat_data_ = nullptr;
  // TASK_SSP_PROXY.
  int32_t updates_slot_ = -1;  // the in-slot of the variable's update, read buffer_size pieces late
  std::vector<int64_t> staleness_;
  int64_t max_staleness_ = 0;
};

}  // namespace rill::runtime::detail
