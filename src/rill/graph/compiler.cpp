#include "rill/graph/compiler.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/attrs.h"
#include "rill/graph/id_index.h"
#include "rill/graph/memory_plan.h"
#include "rill/graph/task_id.h"
#include "rill/util/error.h"

namespace rill::graph {

// Note [From a job to a plan]
// The compiler walks the job's ops in their (topological) order and gives each
// one a task on stream 0 of the CPU, but variables and inputs, which become only
// a register that is ready from the start of an iteration (producer 0):
//   schema op     TASK_COMPUTE, an owned register per output;
//   view op       TASK_VIEW, a REGST_VIEW of the root register it views (views of
//                 views point at the root; the desc's offset, from inference,
//                 counts from the root's start);
//   _delay_tick   TASK_DELAY, a view whose task gives each piece out `delay_num`
//                 pieces late (Note [The delay tick] in runtime/actor.cpp); what the
//                 delayed part reads from outside it gets the buffers to run that
//                 far ahead (Note [Room for a delay]);
//   output        TASK_COPY into a REGST_OUTPUT register (the launch's output); an in_place one a
//                 TASK_TICK after the value's producer, which writes the REGST_OUTPUT itself
//                 (when its registers hold one buffer);
//   assign        TASK_COPY of the value into the variable's own register; an in_place one (Note
//                 [Updates in place] in passes/write_in_place.cpp) a TASK_TICK after the value's
//                 producer, whose output is the variable's register itself;
//   tick          TASK_SOURCE_TICK / TASK_SINK_TICK / TASK_TICK by its kind;
//   _ssp_variable_proxy  TASK_SSP_PROXY, its output a ring of buffer_size buffers
//                 (Note [SSP] in passes/ssp.cpp);
//   acc / repeat  TASK_ACC / TASK_REPEAT (a repeat's output is a view of its input;
//                 an acc of a ctrl input counts pieces and produces a ctrl register);
//                 each acts once per iteration, taking or giving `repeat` pieces.
// Task indices count from 1, so that no task id is 0, the producer of the
// registers that are ready from the start. A task some op names in its
// ctrl_inputs gets one REGST_CTRL register, after its data outputs, read by all
// of them; a carried ctrl input (Note [Orders carried from piece to piece] in
// passes/auto_tick.cpp) reads that register with the edge's lag (Task.in_lags),
// and gets at least lag buffers, so the producer may run as far ahead as the
// lag lets its consumer fall behind. Registers produced in the piece part hold
// options.register_count buffers (producers run that many pieces ahead), the
// others one, as do the bindings (Note [Pieces and the once part] in op_graph.cpp). Last, the
// memory plan gives each owned register a mem block in one chunk, sized for its
// count buffers, reusing the memory of dead registers (Note [The memory plan] in
// memory_plan.cpp).

namespace {

plan::TensorDesc contiguous(const plan::TensorDesc& d) {
  plan::TensorDesc c;
  *c.mutable_shape() = d.shape();
  for (int64_t s : contiguous_strides(Shape(d.shape().begin(), d.shape().end()))) c.add_strides(s);
  c.set_dtype(d.dtype());
  return c;
}

class Compiler {
 public:
  /** Compiles into plan, an empty message (on the arena the caller chose). */
  Compiler(const OpGraph& g, const CompileOptions& options, plan::Plan& plan)
      : job_(g.job()), options_(options), g_(g), pieces_(job_pieces(g.job())), plan_(plan) {}

  void run() {
    RILL_CHECK(options_.register_count >= 1, Runtime, "[graph] compile: register_count must be at least 1, got ",
               options_.register_count);
    check_job();
    parts_ = op_parts(g_);
    bind_external();
    task_of_.assign(g_.size(), -1);
    regst_of_output_.assign(g_.outputs(), -1);
    in_place_of_.assign(g_.outputs(), -1);
    output_in_place_.assign(g_.outputs(), -1);
    ctrl_regst_of_.assign(g_.size(), -1);
    for (int i = 0; i < g_.size(); ++i) {
      const OpConf& a = g_.op(i);
      const bool assign = a.op_type() == kAssign, output = a.op_type() == kOutput;
      if (!(assign || output) || !in_place(a)) continue;
      const int value = assign ? 1 : 0;  // the input holding the value
      const int p = a.inputs_size() == value + 1 ? g_.input_producer(i, value).op : -1;
      RILL_CHECK(p >= 0 && std::find(a.ctrl_inputs().begin(), a.ctrl_inputs().end(), g_.op(p).name()) !=
                               a.ctrl_inputs().end(),
                 Runtime, "[", a.name(), "] an in_place ", a.op_type(), " waits for its value's producer (a ctrl "
                 "input); run run_passes() on the traced job", at(a));
      const int slot = g_.output_number(g_.input_producer(i, value));
      if (assign) in_place_of_[slot] = g_.output_number(g_.input_producer(i, 0));
      else if (count_for(p) == 1) output_in_place_[slot] = static_cast<int>(int_attr(a, "index"));
    }
    for (int i = 0; i < g_.size(); ++i) add_op(i);
    for (int i = 0; i < g_.size(); ++i)
      if (g_.op(i).carried_ctrl_inputs_size()) add_carried(i);
    if (!delays_.empty()) make_room_for_delays();
    plan_.set_pieces(pieces_);
    plan_.set_rank(options_.rank);
    plan_memory();
  }

 private:
  int64_t next_id() { return graph::rank_segment_id(options_.rank, ++counter_); }

  static bool in_place(const OpConf& assign) {
    auto it = assign.attrs().find("in_place");
    return it != assign.attrs().end() && it->second.b();
  }

  // Every op inferred, in topological order, and the ticks of auto_tick there.
  void check_job() {
    int sources = 0, sinks = 0;
    for (int i = 0; i < g_.size(); ++i) {
      const OpConf& op = g_.op(i);
      RILL_CHECK(op.output_descs_size() == op.outputs_size(), Runtime, "[", op.name(), "] has no output descs; "
                 "run infer_job() on the job before compiling it", at(op));
      for (int k = 0; k < op.inputs_size(); ++k) {
        const std::string& lbn = op.inputs(k);
        BlobRef p = g_.input_producer(i, k);
        RILL_CHECK(p.op >= 0, Runtime, "[", op.name(), "] reads '", lbn, "', which no op of the job produces",
                   at(op));
        RILL_CHECK(p.op < i, Runtime, "[", op.name(), "] reads '", lbn, "' before its producer (the job's ops "
                   "must be in topological order)", at(op));
      }
      for (const std::string& name : op.ctrl_inputs()) {
        int p = g_.find(name);
        RILL_CHECK(p >= 0 && p < i, Runtime, "[", op.name(), "] waits for '", name,
                   p < 0 ? "', which is not an op of the job" : "', which comes after it (not topological)",
                   at(op));
      }
      if (op.op_type() == kTick) {
        const std::string kind = str_attr(op, "kind");
        sources += kind == "source";
        sinks += kind == "sink";
      }
    }
    RILL_CHECK(sources == 1 && sinks == 1, Runtime, "[graph] compile: job '", job_.conf().name(), "' has ",
               sources, " source and ", sinks, " sink ticks, not one of each; run run_passes() on it first");
  }

  // Binding order: variables, inputs and outputs are numbered 0..n-1 by attr "index".
  void bind_external() {
    std::map<std::string_view, std::vector<int>> by_kind;
    for (std::string_view kind : {kVariable, kInput, kOutput}) by_kind[kind];
    for (int i = 0; i < g_.size(); ++i)
      if (auto it = by_kind.find(g_.op(i).op_type()); it != by_kind.end()) it->second.push_back(i);
    for (auto& [kind, list] : by_kind) {
      std::vector<int> at_index(list.size(), -1);
      for (int i : list) {
        const OpConf& op = g_.op(i);
        const int64_t index = int_attr(op, "index");
        RILL_CHECK(index >= 0 && index < static_cast<int64_t>(list.size()), Runtime, "[", op.name(), "] ", kind,
                   " index ", index, " is out of range: the job's ", list.size(), " ", kind, "s are numbered 0 to ",
                   list.size() - 1, at(op));
        RILL_CHECK(at_index[index] < 0, Runtime, "[", op.name(), "] ", kind, " index ", index,
                   " is already bound by ", g_.op(at_index[index]).name(), at(op));
        at_index[index] = i;
      }
    }
    for (size_t k = 0; k < by_kind[kVariable].size(); ++k) plan_.add_variables();
    for (size_t k = 0; k < by_kind[kInput].size(); ++k) plan_.add_inputs();
    for (size_t k = 0; k < by_kind[kOutput].size(); ++k) plan_.add_outputs();
  }

  // The register of op i's input k (produced by an op of the job: check_job), or -1 when none was made yet.
  int regst_of(int i, int k) const { return regst_of_output_[g_.output_number(g_.input_producer(i, k))]; }

  // A pipeline stage keeps up to piece_buffers pieces in flight (sbp_lowering sets it: p - s for stage s of p).
  int count_for(int op) const {
    return parts_[op] == Part::kOnce ? 1 : std::max(options_.register_count, g_.job().conf().piece_buffers());
  }

  plan::Regst& new_regst(plan::RegstKind kind, const std::string& lbn, int64_t producer, int count) {
    plan::Regst& r = *plan_.add_regsts();
    r.set_id(next_id());
    r.set_kind(kind);
    r.set_lbn(lbn);
    r.set_producer(producer);
    r.set_count(count);
    return r;
  }

  // The register of lbn, read by task (added to its consumers).
  plan::Regst& read(int i, int k, int64_t task) {
    const int regst = regst_of(i, k);
    if (regst < 0) {
      const OpConf& reader = g_.op(i);
      const std::string& lbn = reader.inputs(k);
      const OpConf& producer = g_.op(g_.input_producer(i, k).op);
      RILL_FAIL(Runtime, "[", reader.name(), "] reads '", lbn, "', the result of ", producer.op_type(), " op ",
                producer.name(), ", which has none to read; read its input instead", at(reader));
    }
    plan::Regst& r = *plan_.mutable_regsts(regst);
    // A task reads all its inputs at once: one reading a blob twice finds itself last.
    if (r.consumers().empty() || r.consumers(r.consumers_size() - 1) != task) r.add_consumers(task);
    return r;
  }

  plan::Task& new_task(int i, plan::TaskKind kind) {
    const OpConf& op = g_.op(i);
    graph::TaskIdParts id;
    id.rank = options_.rank;
    // From 1: task id 0 (rank 0) would read as "no producer". A global job's logical op has its index from the
    // master's table (Note [Separate compilation] in separate.cpp); the tasks the rank added come after them.
    id.index = op.task_index() > 0 ? op.task_index() : job_.conf().task_indices() + (++added_tasks_);
    const OpSchema* schema = schema_of(op);
    if (schema != nullptr && schema->flags.waits_for_peer) id.stream = ++peer_streams_;  // a thread of its own
    plan::Task& t = *plan_.add_tasks();
    t.set_id(graph::encode_task_id(id));
    t.set_kind(kind);
    t.set_name(op.name());
    t.set_loc(op.loc());
    t.set_acts_per_iteration(parts_[i] == Part::kOnce ? 1 : pieces_);
    task_of_[i] = plan_.tasks_size() - 1;
    return t;
  }

  // An owned register for each output of op i, produced by task t.
  void own_outputs(int i, plan::Task& t) {
    const OpConf& op = g_.op(i);
    for (int k = 0; k < op.outputs_size(); ++k) {
      const int slot = g_.output_number({i, k});
      if (const int index = output_in_place_[slot]; index >= 0) {  // the launch's output
        plan::Regst& r = new_regst(plan::REGST_OUTPUT, op.outputs(k), t.id(), 1);
        *r.mutable_desc() = contiguous(op.output_descs(k));
        r.set_binding(index);
        *plan_.mutable_outputs(index) = r.desc();
        regst_of_output_[slot] = plan_.regsts_size() - 1;
        t.add_out_regsts(r.id());
        continue;
      }
      if (const int var = in_place_of_[slot]; var >= 0) {  // written over the variable
        const int v = regst_of_output_[var];
        RILL_CHECK(v >= 0 && plan_.regsts(v).kind() == plan::REGST_VARIABLE, Runtime, "[", op.name(), "] output ",
                   k, " is assigned in place to ", v >= 0 ? plan_.regsts(v).lbn() : "a value", ", which is not a "
                   "variable", at(op));
        regst_of_output_[slot] = v;
        t.add_out_regsts(plan_.regsts(v).id());
        continue;
      }
      plan::Regst& r = new_regst(plan::REGST_OWNED, op.outputs(k), t.id(), count_for(i));
      *r.mutable_desc() = op.output_descs(k);
      regst_of_output_[slot] = plan_.regsts_size() - 1;
      t.add_out_regsts(r.id());
    }
  }

  // A REGST_VIEW output of task t with desc, over the memory of in (or of the register in views).
  void view_output(int i, plan::Task& t, const plan::Regst& in, const plan::TensorDesc& desc) {
    const OpConf& op = g_.op(i);
    const int64_t root = in.kind() == plan::REGST_VIEW ? in.alias_of() : in.id();
    plan::Regst& r = new_regst(plan::REGST_VIEW, op.outputs(0), t.id(), count_for(i));
    *r.mutable_desc() = desc;
    r.set_alias_of(root);
    regst_of_output_[g_.output_number({i, 0})] = plan_.regsts_size() - 1;
    t.add_out_regsts(r.id());
  }

  void add_binding(int i) {
    const OpConf& op = g_.op(i);
    const int index = static_cast<int>(int_attr(op, "index"));
    const bool variable = op.op_type() == kVariable;
    plan::Regst& r = new_regst(variable ? plan::REGST_VARIABLE : plan::REGST_INPUT, op.outputs(0), 0, 1);
    *r.mutable_desc() = op.output_descs(0);
    r.set_binding(index);
    regst_of_output_[g_.output_number({i, 0})] = plan_.regsts_size() - 1;
    if (variable) {
      plan::Variable& v = *plan_.mutable_variables(index);
      v.set_name(op.name());
      *v.mutable_desc() = op.output_descs(0);
      return;
    }
    const int64_t split = int_attr_or(op, "pieces", 1);
    RILL_CHECK(split == pieces_, Runtime, "[", op.name(), "] the input is split into ", split,
               " pieces but the job runs ", pieces_, " per iteration; run run_passes() on the traced job", at(op));
    plan::TensorDesc whole = op.output_descs(0);
    if (whole.shape_size() > 0) whole.set_shape(0, whole.shape(0) * split);
    const auto& shape = op.attrs().at("shape").ints().v();
    RILL_CHECK(std::equal(shape.begin(), shape.end(), whole.shape().begin(), whole.shape().end()), Runtime, "[",
               op.name(), "] the input's desc does not match its attrs; run infer_job() after run_passes()", at(op));
    *plan_.mutable_inputs(index) = contiguous(whole);
    if (split > 1) r.set_piece_stride_bytes(desc_bytes(op.output_descs(0)));
  }

  void add_output(int i, plan::Task& t) {
    const OpConf& op = g_.op(i);
    RILL_CHECK(pieces_ == 1 || parts_[i] == Part::kOnce, Runtime, "[", op.name(), "] an output written by each "
               "of the ", pieces_, " pieces; run run_passes() so that it gets their mean", at(op));
    // An in_place output is a tick: the producer wrote the output (a ctrl input).
    if (output_in_place_[g_.output_number(g_.input_producer(i, 0))] >= 0) return;
    const plan::Regst& in = read(i, 0, t.id());
    t.add_in_regsts(in.id());
    const int index = static_cast<int>(int_attr(op, "index"));
    plan::Regst& r = new_regst(plan::REGST_OUTPUT, op.outputs_size() ? op.outputs(0) : op.name(), t.id(), 1);
    *r.mutable_desc() = contiguous(in.desc());
    r.set_binding(index);
    *plan_.mutable_outputs(index) = r.desc();
    t.add_out_regsts(r.id());
  }

  void add_assign(int i, plan::Task& t) {
    const OpConf& op = g_.op(i);
    const int v = g_.assign_target(i);
    RILL_CHECK(v >= 0, Runtime, "[", op.name(), "] an assign's first input must be a variable", at(op));
    const int index = static_cast<int>(int_attr(g_.op(v), "index"));
    plan::Variable& var = *plan_.mutable_variables(index);
    RILL_CHECK(!var.written(), Runtime, "[", op.name(), "] variable ", var.name(), " is assigned twice in one "
               "iteration", at(op));
    var.set_written(true);
    // An in_place assign is a tick: its producer wrote the variable (a ctrl input orders it).
    if (in_place_of_[g_.output_number(g_.input_producer(i, 1))] >= 0) return;
    t.add_in_regsts(read(i, 1, t.id()).id());
    t.add_out_regsts(plan_.regsts(regst_of(i, 0)).id());
  }

  void add_compute(int i, const OpSchema& schema) {
    const OpConf& op = g_.op(i);
    if (op.op_type() == kDelayTick) return add_delay(i);
    const bool proxy = op.op_type() == kSspProxy;
    plan::Task& t =
        new_task(i, schema.flags.view ? plan::TASK_VIEW : proxy ? plan::TASK_SSP_PROXY : plan::TASK_COMPUTE);
    t.set_op(op.op_type());
    *t.mutable_attrs() = op.attrs();
    *t.mutable_scalars() = op.scalars();
    t.set_random(schema.flags.random);
    for (int k = 0; k < op.inputs_size(); ++k) t.add_in_regsts(read(i, k, t.id()).id());
    if (schema.flags.view) {
      RILL_CHECK(op.inputs_size() == 1 && op.outputs_size() == 1, Runtime, "[", op.name(), "] a view op takes one "
                 "input and gives one output", at(op));
      view_output(i, t, plan_.regsts(regst_of(i, 0)), op.output_descs(0));
      return;
    }
    RILL_CHECK(schema.kernel(DeviceType::kCPU) != nullptr, Runtime, "[", op.name(), "] op '", op.op_type(), "' ",
               schema.composite() ? "is a composite (computed by other ops) and " : "", "has no CPU kernel, so "
               "graph mode cannot run it", at(op));
    own_outputs(i, t);
    if (proxy) {  // the ring: a buffer for each piece that may read a copy while the update runs ahead
      plan::Regst& ring = *plan_.mutable_regsts(regst_of_output_[g_.output_number({i, 0})]);
      ring.set_count(std::max<int32_t>(ring.count(), static_cast<int32_t>(int_attr(op, "buffer_size"))));
    }
  }

  // The carried ctrl inputs of op i: its task reads each producer's ctrl register lag pieces late.
  void add_carried(int i) {
    const OpConf& op = g_.op(i);
    plan::Task& t = *plan_.mutable_tasks(task_of_[i]);
    for (const CarriedCtrl& c : op.carried_ctrl_inputs()) {
      const int p = g_.find(c.op());
      RILL_CHECK(p >= 0 && task_of_[p] >= 0 && c.lag() >= 1 && parts_[p] == Part::kPiece &&
                     parts_[i] == Part::kPiece,
                 Runtime, "[", op.name(), "] waits for '", c.op(), "' ", c.lag(), " pieces back, which is not a "
                 "per-piece task of the job with a lag of at least 1", at(op));
      ctrl_regst(p);
      plan::Regst& r = *plan_.mutable_regsts(ctrl_regst_of_[p]);
      r.set_count(std::max(r.count(), c.lag()));
      r.add_consumers(t.id());
      t.add_in_regsts(r.id());
      while (t.in_lags_size() < t.in_regsts_size()) t.add_in_lags(0);
      t.set_in_lags(t.in_regsts_size() - 1, c.lag());
    }
  }

  void add_delay(int i) {
    plan::Task& t = new_task(i, plan::TASK_DELAY);
    t.set_delay(static_cast<int32_t>(int_attr(g_.op(i), "delay_num")));
    t.add_in_regsts(read(i, 0, t.id()).id());
    view_output(i, t, plan_.regsts(regst_of(i, 0)), g_.op(i).output_descs(0));
    delays_.push_back(i);
  }

  // Note [Room for a delay]
  // What reads a delay's output, directly or not, runs delay_num pieces behind what it does not read: so each
  // task outside that part whose registers something inside reads must be able to make delay_num more pieces
  // before the first is freed (the delay's input, but also, say, the source tick's ones that backward starts
  // from), or the plan deadlocks. Those registers get min(delay_num + 1, pieces) buffers, and so does the input
  // of each view task such a register is the output of (a view holds its input piece while its own is unfreed).
  void make_room_for_delays() {
    const IdIndex regst_index(plan_.regsts());
    std::vector<int> count(plan_.regsts_size(), 0);  // the buffers a register needs, by index in plan_.regsts
    for (int d : delays_) {
      const int in_flight = static_cast<int>(std::min<int64_t>(plan_.tasks(task_of_[d]).delay() + 1, pieces_));
      std::vector<bool> behind(g_.size(), false);  // the delay and what reads it, directly or not
      std::vector<int> todo{d};
      behind[d] = true;
      while (!todo.empty()) {
        const int u = todo.back();
        todo.pop_back();
        for (auto consumers : {g_.data_consumers(u), g_.ctrl_consumers(u)})
          for (int c : consumers)
            if (!behind[c]) behind[c] = true, todo.push_back(c);
      }
      for (int p = 0; p < g_.size(); ++p) {
        if (behind[p] || task_of_[p] < 0) continue;
        bool read_behind = false;
        for (auto consumers : {g_.data_consumers(p), g_.ctrl_consumers(p)})
          for (int c : consumers) read_behind = read_behind || behind[c];
        if (!read_behind) continue;
        for (int64_t id : plan_.tasks(task_of_[p]).out_regsts()) {
          const int r = regst_index.find(id);
          count[r] = std::max(count[r], in_flight);
        }
      }
    }
    for (int r = plan_.regsts_size() - 1; r >= 0; --r) {  // a view's input was made before it
      plan::Regst& regst = *plan_.mutable_regsts(r);
      const plan::RegstKind kind = regst.kind();
      if (count[r] <= regst.count() || regst.producer() == 0 ||
          (kind != plan::REGST_OWNED && kind != plan::REGST_VIEW && kind != plan::REGST_CTRL))
        continue;  // a binding or bound memory (an output, a variable written in place) holds one piece
      regst.set_count(count[r]);
      const plan::Task& producer = plan_.tasks(graph::decode_task_id(regst.producer()).index - 1);
      if (producer.kind() == plan::TASK_VIEW || producer.kind() == plan::TASK_DELAY) {
        const int in = regst_index.find(producer.in_regsts(0));
        count[in] = std::max(count[in], count[r]);
      }
    }
  }

  void add_graph_only(int i) {
    const OpConf& op = g_.op(i);
    const std::string& type = op.op_type();
    if (type == kTick) {
      const std::string kind = str_attr(op, "kind");
      new_task(i, kind == "source" ? plan::TASK_SOURCE_TICK
                                   : kind == "sink" ? plan::TASK_SINK_TICK : plan::TASK_TICK);
    } else if (type == kOutput) {
      const bool in_place = output_in_place_[g_.output_number(g_.input_producer(i, 0))] >= 0;
      add_output(i, new_task(i, in_place ? plan::TASK_TICK : plan::TASK_COPY));
    } else if (type == kAssign) {
      add_assign(i, new_task(i, in_place(op) ? plan::TASK_TICK : plan::TASK_COPY));
    } else {  // acc, repeat
      plan::Task& t = new_task(i, type == kAcc ? plan::TASK_ACC : plan::TASK_REPEAT);
      t.set_repeat(static_cast<int32_t>(int_attr(op, "repeat")));
      t.set_acts_per_iteration(1);  // one act takes (acc) or gives (repeat) `repeat` pieces
      if (op.inputs_size() == 0) return;  // over a ctrl input: its ctrl register is its output
      const plan::Regst& in = read(i, 0, t.id());
      t.add_in_regsts(in.id());
      if (type == kAcc) own_outputs(i, t);
      else view_output(i, t, in, in.desc());
    }
  }

  // The ctrl register of op p's task, made on first use.
  const plan::Regst& ctrl_regst(int p) {
    if (ctrl_regst_of_[p] < 0) {
      plan::Task& producer = *plan_.mutable_tasks(task_of_[p]);
      plan::Regst& r = new_regst(plan::REGST_CTRL, g_.op(p).name() + "/ctrl", producer.id(), count_for(p));
      producer.add_out_regsts(r.id());
      ctrl_regst_of_[p] = plan_.regsts_size() - 1;
    }
    return plan_.regsts(ctrl_regst_of_[p]);
  }

  void add_op(int i) {
    const OpConf& op = g_.op(i);
    RILL_CHECK(parts_[i] != Part::kMixed, Runtime, "[", op.name(), "] reads values of the per-piece part and of "
               "the once-per-iteration part; run run_passes() so that gradient_accumulation separates them", at(op));
    if (is_binding_op(op)) return add_binding(i);
    if (const OpSchema* schema = schema_of(op)) add_compute(i, *schema);
    else add_graph_only(i);
    if (op.ctrl_inputs().empty()) return;
    plan::Task& t = *plan_.mutable_tasks(task_of_[i]);
    // A set, not a search per edge: a sink tick waits for thousands of ops.
    std::unordered_set<int64_t> in(t.in_regsts().begin(), t.in_regsts().end());
    for (const std::string& name : op.ctrl_inputs()) {
      const int p = g_.find(name);
      if (is_binding_op(g_.op(p))) continue;  // a binding is ready from the start
      const int64_t id = ctrl_regst(p).id();
      if (!in.insert(id).second) continue;
      t.add_in_regsts(id);
      plan_.mutable_regsts(ctrl_regst_of_[p])->add_consumers(t.id());
    }
  }

  void plan_memory() {
    const auto& off = job_.conf().disabled_passes();
    const bool reuse = std::find(off.begin(), off.end(), kMemoryReuse) == off.end();
    graph::plan_memory(plan_, reuse, [this] { return next_id(); });
  }

  const Job& job_;
  CompileOptions options_;
  const OpGraph& g_;
  int32_t pieces_;
  std::vector<Part> parts_;
  plan::Plan& plan_;
  // By output number (OpGraph::output_number), not by lbn: no map of ten thousand strings.
  std::vector<int> regst_of_output_;  // index into plan_.regsts, -1 for none yet
  std::vector<int> task_of_;                           // op -> index into plan_.tasks, -1 for none
  std::vector<int> ctrl_regst_of_;                     // op -> index into plan_.regsts of its ctrl register
  std::vector<int> in_place_of_;      // value -> the variable's output an in_place assign writes it over, or -1
  std::vector<int> output_in_place_;  // value -> the output binding its producer writes, or -1
  std::vector<int> delays_;           // the _delay_tick ops (Note [Room for a delay])
  int64_t counter_ = 0;
  int64_t peer_streams_ = 0;  // streams 1.. given to the tasks that wait for a peer (Note [Graph transfers])
  int64_t added_tasks_ = 0;  // tasks of ops without a task index (all of a job of this process)
};

// "float32[2, 3]", with " strides [1, 2]" when not contiguous and " +4" for an offset.
std::string desc_str(const plan::TensorDesc& d) {
  std::ostringstream os;
  Shape shape(d.shape().begin(), d.shape().end());
  Strides strides(d.strides().begin(), d.strides().end());
  os << (d.dtype().empty() ? "?" : d.dtype()) << shape_str(shape);
  if (strides != contiguous_strides(shape)) os << " strides " << shape_str(strides);
  if (d.offset() != 0) os << " +" << d.offset();
  return os.str();
}

std::string list_str(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Attrs by name, in name order (a map's own order is unspecified).
std::string attrs_str(const graph::AttrMap& attrs) {
  std::map<std::string, std::string> sorted;
  for (const auto& [name, value] : attrs) sorted[name] = graph::attr_str(value);
  std::string out;
  for (const auto& [name, value] : sorted) out += (out.empty() ? "" : ", ") + name + "=" + value;
  return out;
}

std::string scalars_str(const google::protobuf::RepeatedPtrField<plan::ScalarValue>& scalars) {
  std::ostringstream os;
  for (int k = 0; k < scalars.size(); ++k) {
    const Scalar s = graph::scalar_from_proto(scalars[k]);
    os << (k ? ", " : "");
    if (s.is_none()) os << "None";
    else if (s.kind() == Scalar::Kind::kBool) os << (s.to<bool>() ? "True" : "False");
    else if (s.kind() == Scalar::Kind::kInt) os << s.to_int();
    else os << s.to_double();
  }
  return os.str();
}

std::string ids_str(const google::protobuf::RepeatedField<int64_t>& ids, bool tasks) {
  std::string out;
  for (int64_t id : ids)
    out += (out.empty() ? "" : ", ") +
           (tasks ? "t" + std::to_string(graph::decode_task_id(id).index) : "r" + std::to_string(id));
  return out;
}

const char* regst_kind_name(plan::RegstKind k) {
  switch (k) {
    case plan::REGST_OWNED: return "owned";
    case plan::REGST_VARIABLE: return "variable";
    case plan::REGST_INPUT: return "input";
    case plan::REGST_OUTPUT: return "output";
    case plan::REGST_VIEW: return "view";
    case plan::REGST_CTRL: return "ctrl";
    default: return "?";
  }
}

}  // namespace

const char* task_kind_name(plan::TaskKind k) {
  switch (k) {
    case plan::TASK_COMPUTE: return "compute";
    case plan::TASK_VIEW: return "view";
    case plan::TASK_COPY: return "copy";
    case plan::TASK_SOURCE_TICK: return "source_tick";
    case plan::TASK_SINK_TICK: return "sink_tick";
    case plan::TASK_TICK: return "tick";
    case plan::TASK_REPEAT: return "repeat";
    case plan::TASK_ACC: return "acc";
    case plan::TASK_DELAY: return "delay";
    case plan::TASK_SSP_PROXY: return "ssp_proxy";
    default: return "?";
  }
}

plan::Plan compile(const Job& job, const CompileOptions& options) {
  plan::Plan plan;
  Compiler(OpGraph(job), options, plan).run();
  return plan;
}

ArenaPlan infer_and_compile(Job& job, InferStats& stats, const CompileOptions& options) {
  const OpGraph g(job);
  infer_job(job, g, stats);
  ArenaPlan plan;
  Compiler(g, options, *plan).run();
  return plan;
}

std::string job_str(const Job& job) {
  std::ostringstream os;
  const JobConf& c = job.conf();
  os << "job " << c.name() << " (" << job.ops_size() << " ops" << (c.train() ? ", train" : "")
     << ", gradient_accumulation_steps " << job_pieces(job) << ")\n";
  os << "  passes: " << (c.pass_order_size() ? list_str(c.pass_order()) : "(none)") << "\n";
  for (const OpConf& op : job.ops()) {
    std::string args = list_str(op.inputs());
    for (const std::string& part : {attrs_str(op.attrs()), scalars_str(op.scalars())})
      if (!part.empty()) args += (args.empty() ? "" : ", ") + part;
    os << "  " << op.name() << " = " << op.op_type() << "(" << args << ")";
    if (op.ctrl_inputs_size()) os << " after(" << list_str(op.ctrl_inputs()) << ")";
    for (const CarriedCtrl& c : op.carried_ctrl_inputs())
      os << " after(" << c.op() << ", " << c.lag() << " piece" << (c.lag() > 1 ? "s" : "") << " back)";
    if (op.outputs_size()) {
      os << " ->";
      for (int k = 0; k < op.outputs_size(); ++k) {
        os << (k ? ", " : " ") << op.outputs(k);
        if (k < op.output_descs_size()) os << ": " << desc_str(op.output_descs(k));
      }
    }
    if (!op.scope().empty() || !op.loc().empty()) os << "  #";
    if (!op.scope().empty()) os << " " << op.scope();
    if (!op.loc().empty()) os << " " << op.loc();
    os << "\n";
  }
  return os.str();
}

std::string plan_str(const plan::Plan& p) {
  std::ostringstream os;
  os << "plan (" << p.tasks_size() << " tasks, " << p.regsts_size() << " registers, " << p.pieces()
     << " piece(s) per iteration, planned peak " << p.planned_peak_bytes() << " bytes)\n";
  for (const plan::Task& t : p.tasks()) {
    os << "  t" << graph::decode_task_id(t.id()).index << " " << task_kind_name(t.kind()) << " " << t.name();
    if (!t.op().empty()) os << " = " << t.op() << "(" << attrs_str(t.attrs()) << ")";
    if (t.scalars_size()) os << " scalars(" << scalars_str(t.scalars()) << ")";
    if (t.repeat()) os << " repeat " << t.repeat();
    os << " in(" << ids_str(t.in_regsts(), false) << ")";
    if (t.in_lags_size()) {
      os << " lags(";
      for (int k = 0; k < t.in_lags_size(); ++k) os << (k ? ", " : "") << t.in_lags(k);
      os << ")";
    }
    os << " out(" << ids_str(t.out_regsts(), false) << ") acts "
       << t.acts_per_iteration() << (t.random() ? " random" : "") << "  [" << graph::task_id_str(t.id()) << "]\n";
  }
  for (const plan::Regst& r : p.regsts()) {
    os << "  r" << r.id() << " " << regst_kind_name(r.kind()) << " " << r.lbn();
    if (r.kind() != plan::REGST_CTRL) os << ": " << desc_str(r.desc());
    os << " count " << r.count() << " from "
       << (r.producer() ? "t" + std::to_string(graph::decode_task_id(r.producer()).index) : "launch") << " to ("
       << ids_str(r.consumers(), true) << ")";
    if (r.kind() == plan::REGST_VARIABLE || r.kind() == plan::REGST_INPUT || r.kind() == plan::REGST_OUTPUT)
      os << " binding " << r.binding();
    if (r.piece_stride_bytes()) os << " piece stride " << r.piece_stride_bytes();
    if (r.kind() == plan::REGST_VIEW) os << " of r" << r.alias_of();
    if (r.kind() == plan::REGST_OWNED) os << " in block " << r.mem_block_id() << " +" << r.mem_offset();
    os << "\n";
  }
  for (const plan::MemBlock& b : p.mem_blocks())
    os << "  block " << b.id() << ": chunk " << b.chunk_id() << " +" << b.offset() << ", " << b.size() << " bytes\n";
  for (const plan::Chunk& c : p.chunks()) os << "  chunk " << c.id() << ": " << c.size() << " bytes\n";
  return os.str();
}

}  // namespace rill::graph
