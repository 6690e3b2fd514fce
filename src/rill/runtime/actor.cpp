#include "rill/runtime/actor.h"

#include <algorithm>
#include <exception>
#include <sstream>
#include <utility>

#include "rill/graph/attrs.h"
#include "rill/graph/compiler.h"
#include "rill/vm/instruction.h"

namespace rill::runtime::detail {

namespace {

/** p + bytes, or null for a null p (a piece announced without data). */
char* offset(char* p, int64_t bytes) { return p ? p + bytes : nullptr; }

}  // namespace

std::string RegstInfo::name() const {
  if (!proto->lbn().empty()) return "'" + proto->lbn() + "'";
  return "register " + std::to_string(proto->id());
}

char* fixed_data(const std::vector<RegstInfo>& regsts, int32_t regst, const Bindings& b, int64_t k) {
  const RegstInfo& r = regsts[regst];
  switch (r.kind) {
    case plan::REGST_VARIABLE: return static_cast<char*>(b.variables[r.proto->binding()]);
    case plan::REGST_INPUT:
      return static_cast<char*>(b.inputs[r.proto->binding()]) + k * r.proto->piece_stride_bytes();
    case plan::REGST_VIEW: return fixed_data(regsts, r.alias, b, k) + r.view_offset_bytes;
    default: RILL_ASSERT(false, "register ", r.name(), " has no memory of its own before an iteration");
  }
  return nullptr;
}

Actor::Actor(const plan::Task& task, const std::vector<RegstInfo>& regsts, std::vector<int32_t> ins,
             std::vector<int32_t> outs, int64_t acts)
    : task_(&task), kind_(task.kind()), regsts_(&regsts), acts_per_iteration_(acts) {
  if (task.in_lags_size() != 0 && task.in_lags_size() != static_cast<int>(ins.size()))
    fail_plan(std::to_string(task.in_lags_size()) + " in_lags for " + std::to_string(ins.size()) + " in_regsts");
  for (size_t k = 0; k < ins.size(); ++k) {
    const int32_t r = ins[k];
    const int32_t lag = task.in_lags_size() ? task.in_lags(static_cast<int>(k)) : 0;
    if (lag < 0 || (lag > 0 && (regsts[r].kind != plan::REGST_CTRL || regsts[r].producer < 0)))
      fail_plan("in_regst " + std::to_string(k) + " has lag " + std::to_string(lag) +
                "; a lag is at least 0, and only a control register with a producer may be read late");
    ins_.push_back(InSlot{r, regsts[r].producer < 0, lag, {}, 0});
  }
  for (int32_t r : outs) {
    OutSlot o;
    o.regst = r;
    o.unfreed.assign(regsts[r].count, 0);
    o.bound = regsts[r].kind == plan::REGST_VARIABLE && regsts[r].producer < 0;
    outs_.push_back(std::move(o));
  }
  for (size_t i = 0; i < ins_.size(); ++i)
    if (regsts[ins_[i].regst].kind != plan::REGST_CTRL) data_ins_.push_back(static_cast<int32_t>(i));
  for (size_t i = 0; i < outs_.size(); ++i)
    if (regsts[outs_[i].regst].kind != plan::REGST_CTRL) data_outs_.push_back(static_cast<int32_t>(i));
  if (task.kind() == plan::TASK_REPEAT || task.kind() == plan::TASK_ACC) {
    if (task.repeat() < 1) fail_plan("repeat is " + std::to_string(task.repeat()) + "; it must be at least 1");
    repeat_ = task.repeat();
  }
  cur_in_.assign(ins_.size(), nullptr);
  cur_out_.assign(outs_.size(), nullptr);
  prepare_outputs();
  switch (task.kind()) {
    case plan::TASK_COMPUTE: prepare_compute(); break;
    case plan::TASK_SSP_PROXY: prepare_ssp_proxy(); break;
    case plan::TASK_COPY: prepare_copy(); break;
    case plan::TASK_ACC:
      if (!data_ins_.empty() || !data_outs_.empty()) prepare_copy();  // else it counts pieces of a tick
      break;
    case plan::TASK_DELAY:
      if (task.delay() < 0) fail_plan("delay is " + std::to_string(task.delay()) + "; it must be at least 0");
      delay_ = task.delay();
      [[fallthrough]];
    case plan::TASK_VIEW:
      if (data_ins_.size() != 1 || data_outs_.size() != 1 || outs_[data_outs_[0]].views < 0)
        fail_plan("a view task needs one data input and one REGST_VIEW output of it");
      break;
    case plan::TASK_REPEAT:
      if (ins_.empty()) fail_plan("a repeat task needs an input");
      break;
    case plan::TASK_SOURCE_TICK:
    case plan::TASK_SINK_TICK:
    case plan::TASK_TICK: break;
    default: fail_plan("unknown task kind " + std::to_string(task.kind()));
  }
}

void Actor::prepare_outputs() {
  const auto& regsts = *regsts_;
  std::vector<bool> held(ins_.size(), false);
  for (OutSlot& o : outs_) {
    const RegstInfo& r = regsts[o.regst];
    if (r.kind == plan::REGST_INPUT) fail_plan("it writes " + r.name() + ", an input of the launch");
    if (kind_ == plan::TASK_REPEAT) {
      // Its pieces are the input's memory, whatever the register says (plan.proto: "same memory").
      if (r.kind == plan::REGST_CTRL) continue;
      if (r.kind != plan::REGST_VIEW && r.kind != plan::REGST_OWNED)
        fail_plan("a repeat task's data output must be REGST_VIEW or REGST_OWNED, not " + std::to_string(r.kind));
      o.views = 0;
    } else if (r.kind == plan::REGST_VIEW) {
      for (size_t i = 0; i < ins_.size(); ++i)
        if (ins_[i].regst == r.alias) o.views = static_cast<int32_t>(i);
      o.view_delta = r.view_offset_bytes;
      // A view of a view: the plan names the root both view; the input's piece is the root's plus its offset.
      for (size_t i = 0; o.views < 0 && i < ins_.size(); ++i) {
        const RegstInfo& in = regsts[ins_[i].regst];
        if (in.kind == plan::REGST_VIEW && in.alias == r.alias) {
          o.views = static_cast<int32_t>(i);
          o.view_delta = r.view_offset_bytes - in.view_offset_bytes;
        }
      }
      const RegstInfo& a = regsts[r.alias];
      bool fixed_memory = a.producer < 0 && (a.kind == plan::REGST_VARIABLE || a.kind == plan::REGST_INPUT ||
                                             a.kind == plan::REGST_VIEW);
      if (o.views < 0 && !fixed_memory)
        fail_plan("its output " + r.name() + " views " + a.name() +
                  ", which is neither an input of the task nor a variable or input");
    }
    if (o.views >= 0 && !ins_[o.views].fixed) {
      if (held[o.views]) fail_plan("two of its outputs view the same input");
      held[o.views] = true;
      o.holds = true;
    }
  }
}

void Actor::prepare_compute() {
  op_ = ops::find(task_->op());
  if (!op_) fail_plan("unknown op '" + task_->op() + "'");
  kernel_ = op_->kernel(DeviceType::kCPU);
  if (!kernel_) fail_plan("op '" + op_->name + "' has no CPU kernel");
  try {
    attrs_ = graph::attrs_from_proto(*op_, task_->attrs());
  } catch (const Error& e) {
    fail_plan(e.what());
  }
  for (const plan::ScalarValue& s : task_->scalars()) scalars_.push_back(graph::scalar_from_proto(s));
  if (static_cast<int>(scalars_.size()) != op_->num_scalars)
    fail_plan(std::to_string(scalars_.size()) + " scalars for op '" + op_->name + "', which takes " +
              std::to_string(op_->num_scalars));
  if (task_->random() && scalars_.size() < 2) fail_plan("a random task needs its seed and offset scalars");
  if (op_->num_inputs >= 0 && static_cast<int>(data_ins_.size()) != op_->num_inputs)
    fail_plan(std::to_string(data_ins_.size()) + " data inputs for op '" + op_->name + "', which takes " +
              std::to_string(op_->num_inputs));
  prepare_args();
  // The plan's output descs must be what the op infers from its input descs: the kernel writes exactly that.
  InferResult r;
  try {
    r = op_->infer(InferContext{*op_, in_metas_, scalars_, *attrs_});
  } catch (const Error& e) {
    fail_plan(e.what());
  }
  if (r.outputs.size() != out_metas_.size())
    fail_plan("op '" + op_->name + "' makes " + std::to_string(r.outputs.size()) + " outputs, the task has " +
              std::to_string(out_metas_.size()));
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const TensorMeta& want = *r.outputs[i];
    const TensorMeta& have = *out_metas_[i];
    if (want.shape != have.shape || want.dtype != have.dtype)
      fail_plan("output " + std::to_string(i) + " is " + have.str() + " but op '" + op_->name + "' makes " +
                want.str());
    if (!op_->strided_output() && !have.contiguous)
      fail_plan("output " + std::to_string(i) + " is strided but op '" + op_->name + "' writes dense outputs");
  }
  for (size_t i = 0; i < r.input_dtypes.size() && i < in_metas_.size(); ++i)
    if (r.input_dtypes[i] != in_metas_[i]->dtype)
      fail_plan("input " + std::to_string(i) + " is " + std::string(dtype_name(in_metas_[i]->dtype)) + " but op '" +
                op_->name + "' computes on " + std::string(dtype_name(r.input_dtypes[i])));
}

void Actor::prepare_ssp_proxy() {
  prepare_compute();
  for (size_t i = 0; i < ins_.size(); ++i)
    if (ins_[i].lag > 0) updates_slot_ = static_cast<int32_t>(i);
  if (data_ins_.size() != 1 || regst(ins_[data_ins_[0]].regst).kind != plan::REGST_VARIABLE || updates_slot_ < 0)
    fail_plan("an SSP proxy reads one variable and, some pieces late, the task that updates it");
}

void Actor::prepare_copy() {
  if (data_ins_.size() != 1 || data_outs_.size() != 1) fail_plan("it needs one data input and one data output");
  prepare_args();
  const TensorMeta& in = *in_metas_[0];
  const TensorMeta& out = *out_metas_[0];
  if (in.shape != out.shape) fail_plan("it copies " + in.str() + " into " + out.str());
  op_ = ops::find("cast");
  kernel_ = op_->kernel(DeviceType::kCPU);
  std::vector<AttrValue> dtype;  // built one by one: GCC 12 misreads a braced list of variants as uninitialised
  dtype.emplace_back(out.dtype);
  attrs_ = make_attrs(std::move(dtype));
  if (kind_ == plan::TASK_ACC) {
    if (in.dtype != out.dtype) fail_plan("it sums " + in.str() + " into " + out.str() + " (dtypes differ)");
    add_op_ = ops::find("add");
    add_kernel_ = add_op_->kernel(DeviceType::kCPU);
  }
  RILL_ASSERT(kernel_ && (kind_ != plan::TASK_ACC || add_kernel_), "cast or add has no CPU kernel");
}

void Actor::prepare_args() {
  for (int32_t i : data_ins_) in_metas_.push_back(regst(ins_[i].regst).meta);
  for (int32_t i : data_outs_) out_metas_.push_back(regst(outs_[i].regst).meta);
  for (const MetaSym& m : in_metas_) in_args_.push_back(TensorArg{nullptr, m.get()});
  for (const MetaSym& m : out_metas_) out_args_.push_back(TensorArg{nullptr, m.get()});
  launch_scalars_ = scalars_;
}

void Actor::fail_plan(const std::string& why) const {
  RILL_FAIL(Runtime, "[runtime] bad plan: task '", task_->name(), "' (", graph::task_kind_name(kind_),
            task_->op().empty() ? "" : " " + task_->op(), "): ", why);
}

Error Actor::task_error(const std::exception& e, ErrorKind kind) const {
  std::ostringstream os;
  os << e.what() << " (graph task '" << task_->name() << "', op "
     << (task_->op().empty() ? std::string(graph::task_kind_name(kind_)) : task_->op());
  if (!task_->loc().empty()) os << ", issued at " << task_->loc();
  os << ")";
  return Error(kind, os.str());
}

void Actor::reset() {
  for (InSlot& in : ins_) {
    in.ready.clear();
    in.taken = 0;
    for (int32_t k = in.lag; k > 0; --k) in.ready.push_back(Piece{-k, nullptr});
  }
  for (OutSlot& out : outs_) {
    out.produced = 0;
    out.freed = 0;
    out.unfreed.assign(out.unfreed.size(), 0);
    out.held.clear();
  }
  acts_ = 0;
  sub_ = 0;
  repeat_data_ = nullptr;
  waiting_ins_ = std::count_if(ins_.begin(), ins_.end(), [](const InSlot& in) { return !in.fixed && !in.lag; });
  staleness_.clear();
}

void Actor::handle(const Message& m, ActorEnv& env) {
  switch (m.kind) {
    case Message::Kind::kStart: break;
    case Message::Kind::kReady: {
      InSlot& in = ins_[m.slot];
      const int64_t position = m.seq + in.lag;  // in the slot's order, the pieces of none first
      if (position >= pieces_in() && in.lag > 0) {  // one of the last lag pieces, which no act takes: free it
        free_piece(in, m.seq, env);
        break;
      }
      RILL_ASSERT(!in.fixed && position == in.taken + static_cast<int64_t>(in.ready.size()), "task '",
                  task_->name(), "' got piece ", m.seq, " out of order");
      if (in.ready.empty()) --waiting_ins_;
      in.ready.push_back(Piece{m.seq, m.data});
      break;
    }
    case Message::Kind::kFree: {
      OutSlot& out = outs_[m.slot];
      int32_t& unfreed = out.unfreed[m.seq % static_cast<int64_t>(out.unfreed.size())];
      RILL_ASSERT(unfreed > 0 && m.seq >= out.freed && m.seq < out.produced, "task '", task_->name(),
                  "' got a free of piece ", m.seq, " it does not lend");
      --unfreed;
      advance(out, env);
      break;
    }
  }
  while (step(env)) {
  }
}

bool Actor::inputs_ready() const { return waiting_ins_ == 0; }

bool Actor::outputs_free() const {
  for (const OutSlot& out : outs_)
    if (!out.bound && out.produced - out.freed >= static_cast<int64_t>(out.unfreed.size())) return false;
  return true;
}

char* Actor::in_data(const InSlot& in, const Bindings& b) const {
  return in.fixed ? fixed_data(*regsts_, in.regst, b, in.taken) : in.ready.front().data;
}

char* Actor::out_data(const OutSlot& out, const Bindings& b) const {
  const RegstInfo& r = regst(out.regst);
  if (kind_ == plan::TASK_REPEAT)
    return r.kind == plan::REGST_CTRL ? nullptr
                                      : offset(repeat_data_, r.kind == plan::REGST_VIEW ? r.view_offset_bytes : 0);
  switch (r.kind) {
    case plan::REGST_OWNED: return r.memory + (out.produced % r.count) * r.bytes;
    case plan::REGST_VARIABLE: return static_cast<char*>(b.variables[r.proto->binding()]);
    case plan::REGST_OUTPUT: return static_cast<char*>(b.outputs[r.proto->binding()]);
    case plan::REGST_VIEW:
      return out.views >= 0 ? offset(cur_in_[out.views], out.view_delta)
                            : offset(fixed_data(*regsts_, r.alias, b, out.produced), r.view_offset_bytes);
    default: return nullptr;
  }
}

void Actor::gather(ActorEnv& env) {
  // Pointers are computed only while computing: the dry run has no bindings, and after an error they are unused.
  bool on = env.computing();
  for (size_t i = 0; i < ins_.size(); ++i) cur_in_[i] = on ? in_data(ins_[i], env.bindings()) : nullptr;
  for (size_t i = 0; i < outs_.size(); ++i) cur_out_[i] = on ? out_data(outs_[i], env.bindings()) : nullptr;
}

void Actor::produce(OutSlot& out, char* data, ActorEnv& env) {
  const RegstInfo& r = regst(out.regst);
  int64_t seq = out.produced++;
  if (out.bound) {  // the write is the act; the variable's readers ran before it (the plan's control edges)
    out.freed = out.produced;
    return;
  }
  out.unfreed[seq % r.count] = static_cast<int32_t>(r.consumers.size());
  for (const Route& c : r.consumers) env.send(Message{Message::Kind::kReady, c.actor, c.slot, seq, data});
  advance(out, env);
}

void Actor::take_inputs(ActorEnv& env, int64_t hold_pieces) {
  for (size_t i = 0; i < ins_.size(); ++i) {
    InSlot& in = ins_[i];
    ++in.taken;
    if (in.fixed) continue;
    int64_t seq = in.ready.front().seq;
    in.ready.pop_front();
    if (in.ready.empty()) ++waiting_ins_;
    if (seq < 0) continue;  // a piece of none, before a lagged register's first
    OutSlot* holder = nullptr;
    for (OutSlot& out : outs_)
      if (out.holds && out.views == static_cast<int32_t>(i)) holder = &out;
    if (holder)
      holder->held.push_back(Held{static_cast<int32_t>(i), seq, holder->produced + hold_pieces});
    else
      free_piece(in, seq, env);
  }
}

void Actor::advance(OutSlot& out, ActorEnv& env) {
  while (out.freed < out.produced &&
         out.unfreed[out.freed % static_cast<int64_t>(out.unfreed.size())] == 0)
    ++out.freed;
  while (!out.held.empty() && out.held.front().release_at <= out.freed) {
    free_piece(ins_[out.held.front().in_slot], out.held.front().seq, env);
    out.held.pop_front();
  }
}

void Actor::free_piece(const InSlot& in, int64_t seq, ActorEnv& env) {
  const RegstInfo& r = regst(in.regst);
  env.send(Message{Message::Kind::kFree, r.producer, r.producer_slot, seq, nullptr});
}

void Actor::compute(ActorEnv& env) {
  for (size_t j = 0; j < data_ins_.size(); ++j) in_args_[j].data = cur_in_[data_ins_[j]];
  for (size_t j = 0; j < data_outs_.size(); ++j) out_args_[j].data = cur_out_[data_outs_[j]];
  if (task_->random()) {
    const Bindings& b = env.bindings();
    launch_scalars_[0] = Scalar(b.seed);
    // Each piece draws its own numbers, as eager's micro-batches do one after the other (Note [Actors]).
    launch_scalars_[1] = Scalar(b.random_offset + piece() * b.random_piece_numbers + scalars_[1].to_int());
  }
  const bool traced = env.tracing();
  const int64_t start = traced ? vm::now_ns() : 0;
  try {
    if (kind_ == plan::TASK_ACC && sub_ > 0) {
      TensorArg sum[2] = {out_args_[0], in_args_[0]};
      add_kernel_(KernelContext{*add_op_, sum, out_args_, *empty_attrs(), {}});
    } else {
      kernel_(KernelContext{*op_, in_args_, out_args_, *attrs_, launch_scalars_});
    }
  } catch (const Error& e) {
    env.fail(task_error(e, e.kind()));
  } catch (const std::exception& e) {
    env.fail(task_error(e, ErrorKind::kRuntime));
  }
  if (traced) env.record_kernel(piece(), start);
}

bool Actor::step(ActorEnv& env) {
  if (kind_ == plan::TASK_REPEAT) return step_repeat(env);
  if (kind_ == plan::TASK_ACC) return step_acc(env);
  if (acts_ >= acts_per_iteration_ || !inputs_ready() || !outputs_free() || delaying()) return false;
  gather(env);
  if (kind_ == plan::TASK_SSP_PROXY) record_staleness(env);
  if (kernel_ && env.computing()) compute(env);
  take_inputs(env, 1);
  for (size_t i = 0; i < outs_.size(); ++i) produce(outs_[i], cur_out_[i], env);
  ++acts_;
  env.count_act();
  return true;
}

void Actor::act_in_order(ActorEnv& env, std::vector<char*>& data) {
  const bool on = env.computing();
  for (size_t i = 0; i < ins_.size(); ++i)
    cur_in_[i] = !on ? nullptr : ins_[i].fixed ? fixed_data(*regsts_, ins_[i].regst, env.bindings(), 0)
                                               : data[static_cast<size_t>(ins_[i].regst)];
  for (size_t i = 0; i < outs_.size(); ++i) {
    cur_out_[i] = on ? out_data(outs_[i], env.bindings()) : nullptr;
    data[static_cast<size_t>(outs_[i].regst)] = cur_out_[i];
  }
  if (kernel_ && on) compute(env);
  env.count_act();
}

// The updates the variable has had this iteration are those its updating task has made (on this thread, so the
// count is exact when the copy is made); every earlier piece's update is applied by the end of the last launch.
void Actor::record_staleness(ActorEnv& env) {
  if (!env.computing()) return;
  const int64_t missed = acts_ - env.pieces_made(ins_[updates_slot_].regst);
  staleness_.push_back(missed);
  max_staleness_ = std::max(max_staleness_, missed);
}

// Note [The delay tick]
// rill.experimental.delay_tick(x, d) is x, given out d pieces late: the TASK_DELAY of a per-piece value acts for
// piece i once piece i + d of its input has come in, or once every piece of the iteration has (the end of the
// data releases what is held). Its output is a view of the input piece, which it holds until the output's
// readers free it, as a view task does; the compiler gives the registers it reads min(d + 1, pieces) buffers, so
// their producers can run the d pieces ahead it waits for. Pieces arrive in order, so the input slot's ready
// list holds pieces taken .. taken + ready - 1.
bool Actor::delaying() const {
  if (kind_ != plan::TASK_DELAY) return false;
  const InSlot& in = ins_[data_ins_[0]];
  if (in.fixed) return false;  // a binding: every piece is there from the start
  const int64_t arrived = in.taken + static_cast<int64_t>(in.ready.size());
  return arrived <= in.taken + delay_ && arrived < acts_per_iteration_;
}

bool Actor::step_repeat(ActorEnv& env) {
  if (sub_ == 0) {
    // Take the next input piece; it stays taken until all `repeat` pieces made of it are freed.
    if (acts_ >= acts_per_iteration_ || !inputs_ready()) return false;
    repeat_data_ = env.computing() ? in_data(ins_[0], env.bindings()) : nullptr;
    take_inputs(env, repeat_);
    sub_ = repeat_;
    ++acts_;
    env.count_act();
    return true;
  }
  if (!outputs_free()) return false;
  for (OutSlot& out : outs_) produce(out, env.computing() ? out_data(out, env.bindings()) : nullptr, env);
  --sub_;
  return true;
}

bool Actor::step_acc(ActorEnv& env) {
  // One step sums one input piece into the output buffer; the repeat-th step produces it (Note [Actors]).
  if (acts_ >= acts_per_iteration_ || !inputs_ready() || (sub_ == 0 && !outputs_free())) return false;
  gather(env);
  if (kernel_ && env.computing()) compute(env);
  take_inputs(env, 0);
  if (++sub_ < repeat_) return true;
  sub_ = 0;
  for (size_t i = 0; i < outs_.size(); ++i) produce(outs_[i], cur_out_[i], env);
  ++acts_;
  env.count_act();
  return true;
}

bool Actor::finished() const {
  if (acts_ < acts_per_iteration_ || sub_ != 0) return false;
  for (const OutSlot& out : outs_)
    if (out.freed < out.produced || !out.held.empty()) return false;
  return true;
}

int64_t Actor::pieces_out() const {
  return acts_per_iteration_ * (kind_ == plan::TASK_REPEAT ? repeat_ : 1);
}

int64_t Actor::pieces_in() const { return acts_per_iteration_ * (kind_ == plan::TASK_ACC ? repeat_ : 1); }

std::string Actor::waiting_on() const {
  std::ostringstream os;
  os << "'" << task_->name() << "' (" << acts_ << "/" << acts_per_iteration_ << " acts) waits for";
  const char* sep = " ";
  if (acts_ < acts_per_iteration_ || sub_ != 0) {
    for (const InSlot& in : ins_)
      if (!in.fixed && in.ready.empty()) {
        os << sep << "piece " << in.taken - in.lag << " of " << regst(in.regst).name();
        sep = ", ";
      }
  }
  for (const OutSlot& out : outs_) {
    int64_t count = static_cast<int64_t>(out.unfreed.size());
    if (out.freed < out.produced && (out.produced - out.freed >= count || acts_ >= acts_per_iteration_)) {
      os << sep << "its consumers to free " << regst(out.regst).name() << " (piece "
         << out.freed << "; " << out.produced << " made, count " << count << ")";
      sep = ", ";
    }
  }
  if (sep[0] == ' ') os << " nothing it can name";
  return os.str();
}

}  // namespace rill::runtime::detail
