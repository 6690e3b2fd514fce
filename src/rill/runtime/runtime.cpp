#include "rill/runtime/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "rill/eager/functional.h"
#include "rill/runtime/actor.h"
#include "rill/runtime/trace.h"
#include "rill/util/env.h"
#include "rill/graph/attrs.h"
#include "rill/graph/id_index.h"
#include "rill/graph/compiler.h"
#include "rill/graph/separate.h"
#include "rill/graph/task_id.h"
#include "rill/vm/instruction.h"

// Note [Actors]
// A plan runs as one actor per task (actor.h). An actor is a state machine: it
// acts when each of its in-registers has a ready piece and each of its
// out-registers has a free buffer, and it talks to other actors only by
// messages:
//   ready(regst, piece, data)  producer -> each consumer: the piece is written;
//   free(regst, piece)         consumer -> producer: done reading it.
// A register of count c has c buffers and piece p lives in buffer p % c, so a
// producer runs at most c pieces ahead of its slowest consumer. Registers
// without a producer (variables, inputs, views of them) are ready for every
// piece from the start and exchange no messages; the k-th piece a consumer
// takes of an input reads binding + k * piece_stride_bytes. Pieces of one
// register are numbered 0, 1, ... per iteration; a ready message carries the
// piece's element 0, so a view (and a repeat) simply points into the memory of
// the piece it was made from, and keeps that piece taken until its own piece is
// freed. A repeat turns each input piece into `repeat` pieces of the same
// memory; an acc sums `repeat` input pieces into one buffer (the first copied,
// the rest added) and produces it once. Each task acts acts_per_iteration times
// per iteration (0 in the plan means plan.pieces): the source tick's acts start
// the pieces, the sink tick's last act comes after every piece has passed. An
// in-register read with a lag L (Task.in_lags: an order carried from one piece
// to a later one) starts each iteration with L pieces of none: act k takes the
// producer's piece k - L, and the producer's last L pieces, which no act takes,
// are freed as they come.
//
// Randomness. A random task (Task.random) draws at the launch's seed, in its
// k-th act of an iteration from random_offset + k * random_piece_numbers + its
// own offset (scalar 1, relative to the trace's first draw). A launch reserves
// pieces times the numbers the traced piece drew, so piece k draws what eager's
// k-th micro-batch would draw in a loop of them, and each piece gets new masks.
//
// Threads. The stream of a task's id picks its thread: stream 0 runs on the
// thread that calls run(), every other stream on a thread the runtime owns. A
// message to an actor of the same thread goes to that thread's local queue and
// is handled right after the current one; to another thread, through its inbox
// (mutex + condvar). `pending_` counts messages sent and not yet handled: it
// reaches 0 exactly when no actor can act any more, which ends the iteration
// whether or not it finished. So run() never hangs: once nothing is pending,
// an actor that has not finished is a deadlock, reported with what each waits
// on. The constructor runs the same protocol once without kernels and on one
// thread (the dry run). Each actor's rule is fixed (act once every input is
// ready and every output free), so whether a plan deadlocks does not depend on
// the order messages are handled in: one that would deadlock does so in the dry
// run, and is rejected before any launch.
//
// Plans run in order. A plan of one piece whose tasks all run on the launching thread, none of them an acc,
// repeat, delay or SSP proxy, needs no messages at all: its tasks' order is a topological one (the compiler's,
// which the memory plan chains, Note [The memory plan] in graph/memory_plan.cpp), each register holds one buffer,
// and each task acts once, so acting every task once in that order does what the actors would, in the order
// they would on one thread. run() then does just that (Actor::act_in_order): each task reads its inputs where
// its producers' acts put them, runs its kernel, and records where its outputs are; no ready or free message,
// no queue. The tiny MLP's training step spent about half of its graph time on its 29 actors' messages. The
// dry run still checks such a plan with the actors' protocol, and a traced runtime (Note [The actors' trace])
// runs the actors. RILL_GRAPH_ACTORS=1 makes every plan run its actors (the protocol's tests).
//
// Errors. A kernel's error is kept (the first one, naming the task, its op and
// the user's line) and turns computing off for the rest of the iteration: the
// actors still pass their messages, without data, so the iteration drains and
// run() raises the kept error; the next run() starts afresh. stats().iterations
// counts launches that finished without an error.

namespace rill::runtime {

using detail::Actor;
using detail::Message;
using detail::RegstInfo;
using detail::Route;

namespace {

/** One actor thread's queues. Worker 0 is the thread that calls run(). */
struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  Fifo<Message> inbox;  // from other threads, under mu
  bool stop = false;          // under mu: the runtime is being destroyed
  Fifo<Message> local;  // sent by this thread's own actors; only this thread touches it
  std::vector<trace::KernelEvent> events;  // this iteration's kernels, when tracing (Note [The actors' trace])
  std::thread thread;         // none for worker 0
};

// Note [Chunks from calloc]
// A chunk's memory starts zeroed. calloc gives that without touching it when the block is large (fresh pages
// from the system are zero): pages fault in as the kernels first write them, not all at construction, where
// memset would fault in every page of a 48-block plan's tens of megabytes before any launch.
struct CFree {
  void operator()(void* p) const { std::free(p); }
};

/** A plan chunk's memory: zeroed, its data 64-byte aligned. */
struct ChunkMemory {
  std::unique_ptr<void, CFree> raw;
  std::byte* data = nullptr;
};

ChunkMemory zeroed_chunk(size_t bytes) {
  constexpr size_t kAlign = 64;
  ChunkMemory m;
  m.raw.reset(std::calloc(bytes + kAlign - 1, 1));
  if (m.raw == nullptr) throw std::bad_alloc();
  const auto at = reinterpret_cast<uintptr_t>(m.raw.get());
  m.data = static_cast<std::byte*>(m.raw.get()) + ((kAlign - at % kAlign) % kAlign);
  return m;
}

[[noreturn]] void bad_plan(const std::string& why) { RILL_FAIL(Runtime, "[runtime] bad plan: ", why); }

/** Bytes from element 0 to one past the last element of meta (its buffer's size). */
int64_t span_bytes(const TensorMeta& m, const std::string& name) {
  if (m.numel == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < m.shape.size(); ++d) {
    if (m.strides[d] < 0) bad_plan(name + " has a negative stride");
    last += (m.shape[d] - 1) * m.strides[d];
  }
  return (last + 1) * dtype_itemsize(m.dtype);
}

}  // namespace

struct Runtime::Impl {
  Impl(graph::ArenaPlan p, std::string name);
  ~Impl();
  void index_regsts();
  void index_tasks();
  void check_regsts();
  void place_memory();
  void make_actors();
  void start_workers();
  /** Run the actors until nothing is pending (one iteration, or the dry run). */
  void drain();
  void done_one();
  bool all_finished() const;
  std::string deadlock_report() const;
  void check_bindings(const Bindings& b) const;
  void label_tasks(std::string graph);
  void hand_over_trace();
  /** Whether the plan may run in order (Note [Plans run in order]). */
  bool runs_in_order() const;
  /** One iteration in order: each task acts once, in the plan's order. */
  void run_in_order();

  class Dispatch;

  graph::ArenaPlan arena_plan_;  // what plan_ is: its tasks and registers lie in order on its arena
  plan::Plan& plan_;
  std::vector<RegstInfo> regsts_;
  graph::IdIndex regst_index_;  // register id -> index in plan_.regsts
  std::vector<std::unique_ptr<Actor>> actors_;
  std::vector<int32_t> worker_of_;  // per actor
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<ChunkMemory> chunks_;
  int64_t owned_bytes_ = 0;
  std::mutex run_mu_;  // one launch at a time
  bool dry_ = false;   // the constructor's dry run: one thread, no kernels, no bindings
  Bindings launch_;
  std::atomic<int64_t> pending_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  std::optional<Error> error_;  // under error_mu_
  std::atomic<int64_t> iterations_{0}, acts_{0}, messages_{0};
  bool in_order_ = false;                            // Note [Plans run in order]
  std::vector<char*> in_order_data_;                 // per register: where its data is this iteration
  std::shared_ptr<const trace::TaskLabels> labels_;  // null unless RILL_GRAPH_TRACE was set at construction
  int64_t runs_ = 0;                                 // under run_mu_: launches so far, the trace's iteration
};

/** The runtime as the actors of one thread see it. */
class Runtime::Impl::Dispatch final : public detail::ActorEnv {
 public:
  Dispatch(Impl& rt, Worker& self) : rt_(rt), self_(self) {}

  void send(const Message& m) override {
    // acq_rel: counted before the message can be handled (so before the sender's own decrement); see done_one.
    rt_.pending_.fetch_add(1, std::memory_order_acq_rel);
    // relaxed: a statistic, read after the iteration.
    if (m.kind != Message::Kind::kStart && !rt_.dry_) rt_.messages_.fetch_add(1, std::memory_order_relaxed);
    Worker& to = rt_.dry_ ? self_ : *rt_.workers_[rt_.worker_of_[m.actor]];
    if (&to == &self_) {
      self_.local.push_back(m);
      return;
    }
    std::lock_guard<std::mutex> lock(to.mu);
    to.inbox.push_back(m);
    to.cv.notify_one();
  }
  // acquire: pairs with the release in fail(), so an actor that sees the error also sees computing off.
  bool computing() const override { return !rt_.dry_ && !rt_.failed_.load(std::memory_order_acquire); }
  void fail(const Error& e) override {
    {
      std::lock_guard<std::mutex> lock(rt_.error_mu_);
      if (!rt_.error_) rt_.error_ = e;
    }
    rt_.failed_.store(true, std::memory_order_release);  // release: see computing()
  }
  const Bindings& bindings() const override { return rt_.launch_; }
  // relaxed: a statistic, read after the iteration.
  void count_act() override {
    if (!rt_.dry_) rt_.acts_.fetch_add(1, std::memory_order_relaxed);
  }
  bool tracing() const override { return rt_.labels_ != nullptr; }
  void record_kernel(int64_t piece, int64_t start_ns) override {
    self_.events.push_back(trace::KernelEvent{actor_, piece, start_ns, vm::now_ns(), trace::this_thread_id()});
  }
  // The producer is on this thread (make_actors checks it for the one reader, the SSP proxy).
  int64_t pieces_made(int32_t regst) const override {
    const RegstInfo& r = rt_.regsts_[regst];
    return rt_.actors_[r.producer]->pieces_made(r.producer_slot);
  }

  /** Handle m, then everything this thread's actors sent each other meanwhile. */
  void process(const Message& m) {
    handle(m);
    while (!self_.local.empty()) {
      Message next = self_.local.front();
      self_.local.pop_front();
      handle(next);
    }
  }

 private:
  void handle(const Message& m) {
    actor_ = m.actor;  // an actor acts only while it handles a message of its own
    try {
      rt_.actors_[m.actor]->handle(m, *this);
    } catch (const Error& e) {  // an internal check of the actor: keep it, the iteration ends as a deadlock
      fail(e);
    } catch (const std::exception& e) {
      fail(Error(ErrorKind::kRuntime, std::string("[runtime] ") + e.what()));
    }
    rt_.done_one();
  }

  Impl& rt_;
  Worker& self_;
  int32_t actor_ = 0;  // the actor handling the current message
};

Runtime::Impl::Impl(graph::ArenaPlan p, std::string name) : arena_plan_(std::move(p)), plan_(*arena_plan_) {
  eager::op("add");  // registers the ops and their kernels
  graph::check_plan_ids(plan_);  // Note [Separate compilation] in graph/separate.cpp
  index_regsts();
  index_tasks();
  check_regsts();
  place_memory();
  make_actors();
  dry_ = true;
  drain();
  dry_ = false;
  if (error_) throw *error_;
  if (!all_finished()) RILL_FAIL(Runtime, deadlock_report(), " (found while checking the plan)");
  if (trace::path_from_env()) label_tasks(std::move(name));
  in_order_ = runs_in_order();
  in_order_data_.assign(regsts_.size(), nullptr);
  start_workers();
}

bool Runtime::Impl::runs_in_order() const {
  if (labels_ || workers_.size() != 1 || plan_.pieces() > 1 || env::get_bool("RILL_GRAPH_ACTORS", false)) return false;
  for (int i = 0; i < plan_.tasks_size(); ++i) {
    const plan::Task& t = plan_.tasks(i);
    switch (t.kind()) {
      case plan::TASK_COMPUTE: case plan::TASK_VIEW: case plan::TASK_COPY: case plan::TASK_TICK:
      case plan::TASK_SOURCE_TICK: case plan::TASK_SINK_TICK: break;
      default: return false;
    }
    if (t.acts_per_iteration() > 1 || t.in_lags_size() > 0) return false;
    for (int64_t id : t.in_regsts()) {  // produced earlier in the order, or ready from the start
      const RegstInfo& r = regsts_[regst_index_.find(id)];
      if (r.producer >= i) return false;
    }
  }
  for (const RegstInfo& r : regsts_)
    if (r.count != 1) return false;
  return true;
}

void Runtime::Impl::run_in_order() {
  Dispatch env(*this, *workers_[0]);
  for (auto& a : actors_) a->act_in_order(env, in_order_data_);
}

void Runtime::Impl::label_tasks(std::string graph) {
  auto labels = std::make_shared<trace::TaskLabels>();
  labels->graph = std::move(graph);
  for (const plan::Task& t : plan_.tasks()) {
    labels->names.push_back(t.name());
    labels->ops.push_back(t.op().empty() ? graph::task_kind_name(t.kind()) : t.op());
    labels->ids.push_back(graph::task_id_str(t.id()));
  }
  labels_ = std::move(labels);
}

void Runtime::Impl::hand_over_trace() {
  // Every worker's events happened before drain() saw nothing pending (Note [The actors' trace] in trace.cpp).
  for (auto& w : workers_) trace::add(labels_, runs_, w->events);
}

Runtime::Impl::~Impl() {
  for (size_t i = 1; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.stop = true;
    }
    w.cv.notify_one();
    if (w.thread.joinable()) w.thread.join();
  }
}

void Runtime::Impl::index_regsts() {
  regsts_.resize(static_cast<size_t>(plan_.regsts_size()));
  regst_index_ = graph::IdIndex(plan_.regsts());
  if (std::optional<int64_t> id = regst_index_.repeated()) bad_plan("two registers have id " + std::to_string(*id));
  for (int i = 0; i < plan_.regsts_size(); ++i) {
    const plan::Regst& proto = plan_.regsts(i);
    RegstInfo& r = regsts_[i];
    r.proto = &proto;
    r.kind = proto.kind();
    r.count = proto.count();
    r.consumers.reserve(static_cast<size_t>(proto.consumers_size()));
    if (!plan::RegstKind_IsValid(r.kind)) bad_plan(r.name() + " has an unknown kind");
    if (r.count < 1) bad_plan(r.name() + " has count " + std::to_string(r.count));
    if (r.kind == plan::REGST_CTRL) continue;
    const plan::TensorDesc& d = proto.desc();
    if (d.shape_size() != d.strides_size())
      bad_plan(r.name() + "'s desc has " + std::to_string(d.shape_size()) + " dims and " +
               std::to_string(d.strides_size()) + " strides");
    try {
      r.meta = graph::meta_from_proto(d);
    } catch (const Error& e) {
      bad_plan(r.name() + ": " + e.what());
    }
    r.bytes = span_bytes(*r.meta, r.name());
  }
}

void Runtime::Impl::index_tasks() {
  if (std::optional<int64_t> id = graph::IdIndex(plan_.tasks()).repeated())
    bad_plan("two tasks have id " + std::to_string(*id));
  for (int i = 0; i < plan_.tasks_size(); ++i) {
    const plan::Task& t = plan_.tasks(i);
    if (t.id() == 0) bad_plan("task '" + t.name() + "' has id 0, which means no producer");
    if (graph::decode_task_id(t.id()).device_type != DeviceType::kCPU)
      bad_plan("task '" + t.name() + "' runs on " + graph::task_id_str(t.id()) + "; this runtime runs CPU tasks");
  }
  auto regst_of = [&](int64_t id, const plan::Task& t) -> int32_t {
    const int r = regst_index_.find(id);
    if (r < 0) bad_plan("task '" + t.name() + "' names register " + std::to_string(id) + ", which the plan lacks");
    return r;
  };
  for (int i = 0; i < plan_.tasks_size(); ++i) {
    const plan::Task& t = plan_.tasks(i);
    for (int k = 0; k < t.out_regsts_size(); ++k) {
      RegstInfo& r = regsts_[regst_of(t.out_regsts(k), t)];
      // An assign writes its variable in place, as does an update whose assign is in place (Note [Updates in
      // place] in graph/passes/write_in_place.cpp): the variable stays ready from the start for its readers,
      // which the plan's control edges order before the write.
      if (r.kind == plan::REGST_VARIABLE && r.proto->producer() == 0 &&
          (t.kind() == plan::TASK_COPY || t.kind() == plan::TASK_COMPUTE))
        continue;
      if (r.proto->producer() != t.id() || r.producer >= 0)
        bad_plan("task '" + t.name() + "' writes " + r.name() + ", whose producer is " +
                 std::to_string(r.proto->producer()));
      r.producer = i;
      r.producer_slot = k;
    }
    for (int k = 0; k < t.in_regsts_size(); ++k)
      regsts_[regst_of(t.in_regsts(k), t)].consumers.push_back(Route{i, k});
  }
}

void Runtime::Impl::check_regsts() {
  std::vector<int64_t> listed, reading;  // one pair for every register: ten thousand at 48 blocks
  for (RegstInfo& r : regsts_) {
    const plan::Regst& p = *r.proto;
    if (p.producer() != 0 && r.producer < 0)
      bad_plan(r.name() + " names producer " + std::to_string(p.producer()) +
               ", which does not list it as an output");
    // The consumer lists of the registers and the tasks' in_regsts must agree, or a producer would wait forever.
    listed.assign(p.consumers().begin(), p.consumers().end());
    reading.clear();
    for (const Route& c : r.consumers) reading.push_back(plan_.tasks(c.actor).id());
    for (std::vector<int64_t>* ids : {&listed, &reading}) {  // as sets: sorted vectors, not a tree per register
      std::sort(ids->begin(), ids->end());
      ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
    }
    if (listed != reading)
      bad_plan(r.name() + " lists " + std::to_string(listed.size()) + " consumers but " +
               std::to_string(reading.size()) + " tasks read it, and they differ");
    bool fixed_kind = r.kind == plan::REGST_VARIABLE || r.kind == plan::REGST_INPUT || r.kind == plan::REGST_VIEW;
    if (r.producer < 0 && !r.consumers.empty() && !fixed_kind)
      bad_plan(r.name() + " is consumed by task '" + plan_.tasks(r.consumers[0].actor).name() +
               "' but never produced");
    if (r.producer < 0 && r.kind == plan::REGST_OUTPUT)
      bad_plan("output " + std::to_string(p.binding()) + " (" + r.name() + ") is never produced");
    if ((r.kind == plan::REGST_OUTPUT || r.kind == plan::REGST_VARIABLE) && r.producer >= 0 && r.count != 1)
      bad_plan(r.name() + " is written into bound memory and has count " + std::to_string(r.count) + ", not 1");
    auto check_binding = [&](int size, const char* what) {
      if (p.binding() < 0 || p.binding() >= size)
        bad_plan(r.name() + " binds " + what + " " + std::to_string(p.binding()) + " of " + std::to_string(size));
    };
    if (r.kind == plan::REGST_VARIABLE) check_binding(plan_.variables_size(), "variable");
    if (r.kind == plan::REGST_INPUT) check_binding(plan_.inputs_size(), "input");
    if (r.kind == plan::REGST_OUTPUT) check_binding(plan_.outputs_size(), "output");
    if (r.kind == plan::REGST_INPUT && p.piece_stride_bytes() < 0)
      bad_plan(r.name() + " has a negative piece stride");
    if (r.kind == plan::REGST_VIEW) {
      r.alias = regst_index_.find(p.alias_of());
      if (r.alias < 0)
        bad_plan(r.name() + " views register " + std::to_string(p.alias_of()) + ", which the plan lacks");
      if (regsts_[r.alias].kind == plan::REGST_CTRL) bad_plan(r.name() + " views a control register");
      r.view_offset_bytes = p.desc().offset() * dtype_itemsize(r.meta->dtype);
    }
  }
  // A chain of views must end at memory; a view without a producer must view, through views without producers
  // too, a variable or an input (fixed_data follows the chain at each act).
  for (RegstInfo& r : regsts_) {
    if (r.kind != plan::REGST_VIEW) continue;
    int32_t a = r.alias;
    for (size_t steps = 0; regsts_[a].kind == plan::REGST_VIEW; ++steps) {
      if (steps > regsts_.size()) bad_plan(r.name() + " is a view of itself");
      a = regsts_[a].alias;
    }
    if (r.producer >= 0) continue;
    for (int32_t x = r.alias;; x = regsts_[x].alias) {
      const RegstInfo& v = regsts_[x];
      if (v.producer >= 0) bad_plan(r.name() + " has no producer but views " + v.name() + ", which has one");
      if (v.kind == plan::REGST_VIEW) continue;
      if (v.kind != plan::REGST_VARIABLE && v.kind != plan::REGST_INPUT)
        bad_plan(r.name() + " has no producer but views " + v.name() + ", which is neither a variable nor an input");
      break;
    }
  }
}

void Runtime::Impl::place_memory() {
  std::unordered_map<int64_t, int32_t> chunk_index;
  for (int i = 0; i < plan_.chunks_size(); ++i) {
    const plan::Chunk& c = plan_.chunks(i);
    if (c.size() < 0 || !chunk_index.emplace(c.id(), i).second)
      bad_plan("chunk " + std::to_string(c.id()) + " is repeated or has a negative size");
    size_t bytes = static_cast<size_t>(std::max<int64_t>(c.size(), 1));
    chunks_.push_back(zeroed_chunk(bytes));  // Note [Chunks from calloc]
    owned_bytes_ += c.size();
  }
  const graph::IdIndex blocks(plan_.mem_blocks());
  if (std::optional<int64_t> id = blocks.repeated()) bad_plan("two mem blocks have id " + std::to_string(*id));
  for (const plan::MemBlock& b : plan_.mem_blocks()) {
    auto c = chunk_index.find(b.chunk_id());
    if (c == chunk_index.end()) bad_plan("mem block " + std::to_string(b.id()) + " is in a chunk the plan lacks");
    if (b.offset() < 0 || b.size() < 0 || b.offset() + b.size() > plan_.chunks(c->second).size())
      bad_plan("mem block " + std::to_string(b.id()) + " does not fit in its chunk");
  }
  for (RegstInfo& r : regsts_) {
    if (r.kind != plan::REGST_OWNED) continue;
    const int block = blocks.find(r.proto->mem_block_id());
    if (block < 0)
      bad_plan(r.name() + " is in mem block " + std::to_string(r.proto->mem_block_id()) + ", which the plan lacks");
    const plan::MemBlock& b = plan_.mem_blocks(block);
    if (r.proto->mem_offset() < 0 || r.proto->mem_offset() + r.count * r.bytes > b.size())
      bad_plan(r.name() + "'s " + std::to_string(r.count) + " buffers of " + std::to_string(r.bytes) +
               " bytes at offset " + std::to_string(r.proto->mem_offset()) + " do not fit in its mem block of " +
               std::to_string(b.size()) + " bytes");
    r.memory = reinterpret_cast<char*>(chunks_[chunk_index.at(b.chunk_id())].data) +
               b.offset() + r.proto->mem_offset();
  }
  for (const RegstInfo& r : regsts_) {
    if (r.kind != plan::REGST_VIEW || regsts_[r.alias].kind != plan::REGST_OWNED) continue;
    const RegstInfo& a = regsts_[r.alias];
    if (r.view_offset_bytes < 0 || r.view_offset_bytes + r.bytes > a.bytes)
      bad_plan(r.name() + " reaches outside the buffer of " + a.name() + " it views");
  }
}

void Runtime::Impl::make_actors() {
  int64_t pieces = std::max(plan_.pieces(), 1);
  std::map<int64_t, int32_t> worker_of_stream{{0, 0}};
  for (int i = 0; i < plan_.tasks_size(); ++i) {
    const plan::Task& t = plan_.tasks(i);
    if (t.acts_per_iteration() < 0) bad_plan("task '" + t.name() + "' acts a negative number of times");
    std::vector<int32_t> ins, outs;
    for (int64_t id : t.in_regsts()) ins.push_back(regst_index_.find(id));  // each there (index_tasks)
    for (int64_t id : t.out_regsts()) outs.push_back(regst_index_.find(id));
    int64_t acts = t.acts_per_iteration() > 0 ? t.acts_per_iteration() : pieces;
    actors_.push_back(std::make_unique<Actor>(t, regsts_, std::move(ins), std::move(outs), acts));
    int64_t stream = graph::decode_task_id(t.id()).stream;
    auto [it, added] = worker_of_stream.emplace(stream, static_cast<int32_t>(worker_of_stream.size()));
    worker_of_.push_back(it->second);
  }
  for (size_t i = 0; i < worker_of_stream.size(); ++i) workers_.push_back(std::make_unique<Worker>());
  for (size_t i = 0; i < actors_.size(); ++i) {
    const plan::Task& t = plan_.tasks(static_cast<int>(i));
    if (t.kind() != plan::TASK_SSP_PROXY) continue;
    for (int k = 0; k < t.in_lags_size(); ++k)
      if (t.in_lags(k) > 0 && worker_of_[regsts_[regst_index_.find(t.in_regsts(k))].producer] != worker_of_[i])
        bad_plan("SSP proxy '" + t.name() + "' and the task updating its variable run on different threads");
  }
  // Every consumer of a register must take as many pieces per iteration as its producer makes.
  for (const RegstInfo& r : regsts_) {
    if (r.producer < 0) continue;
    const Actor& p = *actors_[r.producer];
    for (const Route& c : r.consumers) {
      const Actor& q = *actors_[c.actor];
      if (p.pieces_out() != q.pieces_in())
        bad_plan("task '" + p.task().name() + "' makes " + std::to_string(p.pieces_out()) + " pieces of " + r.name() +
                 " per iteration but task '" + q.task().name() + "' takes " + std::to_string(q.pieces_in()));
    }
  }
}

void Runtime::Impl::start_workers() {
  for (size_t i = 1; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    w.thread = std::thread([this, &w, i] {
      std::string name = "rill-actors-" + std::to_string(i);  // the trace's name for the thread
      pthread_setname_np(pthread_self(), name.c_str());
      Dispatch env(*this, w);
      Fifo<Message> batch;
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(w.mu);
          w.cv.wait(lock, [&] { return w.stop || !w.inbox.empty(); });
          if (w.inbox.empty()) return;
          batch.swap(w.inbox);
        }
        for (; !batch.empty(); batch.pop_front()) env.process(batch.front());
      }
    });
  }
}

void Runtime::Impl::done_one() {
  // acq_rel: the release publishes this thread's actor state to the caller of run(), whose acquire load sees 0
  // only after every decrement (a chain of read-modify-writes), so it sees every thread's writes.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Worker& w0 = *workers_[0];
  // Notify under the lock: once it is released, run() may return and the runtime go away.
  std::lock_guard<std::mutex> lock(w0.mu);
  w0.cv.notify_all();
}

void Runtime::Impl::drain() {
  for (auto& a : actors_) a->reset();
  Worker& w0 = *workers_[0];
  Dispatch env(*this, w0);
  // A guard count, so that pending_ cannot reach 0 before every actor has been started.
  pending_.fetch_add(1, std::memory_order_acq_rel);  // acq_rel: see done_one
  for (size_t i = 0; i < actors_.size(); ++i)
    env.send(Message{Message::Kind::kStart, static_cast<int32_t>(i), 0, 0, nullptr});
  while (!w0.local.empty()) {
    Message m = w0.local.front();
    w0.local.pop_front();
    env.process(m);
  }
  done_one();
  Fifo<Message> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(w0.mu);
      // acquire: see done_one.
      w0.cv.wait(lock, [&] { return !w0.inbox.empty() || pending_.load(std::memory_order_acquire) == 0; });
      if (w0.inbox.empty()) return;
      batch.swap(w0.inbox);
    }
    for (; !batch.empty(); batch.pop_front()) env.process(batch.front());
  }
}

bool Runtime::Impl::all_finished() const {
  return std::all_of(actors_.begin(), actors_.end(), [](const auto& a) { return a->finished(); });
}

std::string Runtime::Impl::deadlock_report() const {
  std::ostringstream os;
  os << "[runtime] plan deadlocked: ";
  int n = 0;
  for (const auto& a : actors_) {
    if (a->finished()) continue;
    if (n < 8) os << (n ? "; " : "") << a->waiting_on();
    ++n;
  }
  if (n > 8) os << "; and " << n - 8 << " more tasks";
  return os.str();
}

void Runtime::Impl::check_bindings(const Bindings& b) const {
  auto check = [](std::span<void* const> given, int want, const char* what) {
    RILL_CHECK(static_cast<int>(given.size()) == want, Value, "[runtime] the plan binds ", want, " ", what,
               ", the launch gives ", given.size());
    for (size_t i = 0; i < given.size(); ++i)
      RILL_CHECK(given[i] != nullptr, Value, "[runtime] ", what, " ", i, " of the launch has no memory");
  };
  check(b.variables, plan_.variables_size(), "variables");
  check(b.inputs, plan_.inputs_size(), "inputs");
  check(b.outputs, plan_.outputs_size(), "outputs");
}

Runtime::Runtime(graph::ArenaPlan plan, std::string name) : impl_(std::make_unique<Impl>(std::move(plan), std::move(name))) {}

Runtime::~Runtime() = default;

void Runtime::run(const Bindings& bindings) {
  Impl& rt = *impl_;
  std::lock_guard<std::mutex> lock(rt.run_mu_);
  rt.check_bindings(bindings);
  rt.launch_ = bindings;
  rt.failed_.store(false, std::memory_order_relaxed);  // relaxed: no actor runs until drain() sends its messages
  if (rt.in_order_) rt.run_in_order();
  else rt.drain();
  if (rt.labels_) rt.hand_over_trace();
  ++rt.runs_;
  std::optional<Error> error;
  {
    std::lock_guard<std::mutex> error_lock(rt.error_mu_);
    error.swap(rt.error_);
  }
  if (error) throw *error;
  if (!rt.in_order_ && !rt.all_finished()) RILL_FAIL(Runtime, rt.deadlock_report());
  rt.iterations_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
}

const plan::Plan& Runtime::plan() const { return impl_->plan_; }

RuntimeStats Runtime::stats() const {
  // relaxed: statistics; a reader racing a launch sees some recent value.
  const Impl& rt = *impl_;
  return RuntimeStats{rt.iterations_.load(std::memory_order_relaxed), rt.acts_.load(std::memory_order_relaxed),
                      rt.messages_.load(std::memory_order_relaxed), rt.owned_bytes_};
}

std::vector<SspRecord> Runtime::ssp() const {
  const Impl& rt = *impl_;
  std::vector<SspRecord> out;
  for (const auto& a : rt.actors_) {
    const plan::Task& t = a->task();
    if (t.kind() != plan::TASK_SSP_PROXY) continue;
    const RegstInfo& var = rt.regsts_[rt.regst_index_.find(t.in_regsts(0))];
    SspRecord r;
    r.variable = rt.plan_.variables(var.proto->binding()).name();
    r.stage = t.attrs().at("stage").i();
    r.bound = t.attrs().at("buffer_size").i() - 1;
    r.staleness = a->staleness();
    r.max_staleness = a->max_staleness();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace rill::runtime
