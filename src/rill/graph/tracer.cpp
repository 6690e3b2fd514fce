#include "rill/graph/tracer.h"

#include <atomic>
#include <string_view>
#include <unordered_map>

#include "rill/eager/functional.h"
#include "rill/graph/attrs.h"
#include "rill/graph/op_graph.h"
#include "rill/util/error.h"
#include "rill/vm/instruction.h"

namespace rill::graph {

// Note [Tracing memory]
// Eager tensors are handles to memory that ops read, write in place and view; a
// job's blobs are values, each written once. The tracer keeps, per storage it
// has seen, the blob that holds the value of the storage's whole tensor (its
// root) and a version counting the writes traced into it; per tensor handle, the
// blob it read as of some version, and for a view the op that made it from its
// parent. Reading a tensor (resolve) gives its blob when the memory has not been
// written since; otherwise a view is made again from its parent's current blob,
// and a tensor the trace did not see being made (a detach(), which shares memory
// without an op) is read as a restride of its root. A write into a root (an
// in-place op, copy_, fill_, the optimizer's update) is traced as the op
// producing a new blob, which becomes the root's value; a write into part of a
// root (a view's copy_, x[i] = v, a slice's gradient written into zeros) is the
// op producing the part's value, then restride_scatter producing the root's new
// value with the part in place. Memory the trace did not
// make is eager memory: a parameter, a buffer, optimizer state or a captured
// constant becomes a variable op bound to that tensor; a graph input an input
// op. Memory nothing has written yet (empty() inside build, then filled) is the
// trace's own. At the end, each variable whose value changed gets an assign op, which
// writes the new value into the eager tensor once the iteration's readers ran.
// Tensors made by the trace never get memory; they are poisoned when it ends.

namespace {

bool same_view(const Tensor& a, const Tensor& b) { return a.meta() == b.meta() && a.offset() == b.offset(); }

// The last element of t, in elements from its storage's start (t's extent is [offset, last]).
int64_t last_element(const Tensor& t) {
  int64_t last = t.offset();
  for (int64_t d = 0; d < t.ndim(); ++d)
    if (t.shape()[d] > 0) last += (t.shape()[d] - 1) * t.strides()[d];
  return last;
}

std::string here() { return vm::location_str(vm::capture_location()); }

std::string at(const std::string& where) { return where.empty() ? std::string() : " (at " + where + ")"; }

// The attrs of restride (and restride_scatter) placing t inside root, its storage's whole tensor.
AttrsSym restride_attrs(const Tensor& t, const Tensor& root) {
  std::vector<int64_t> size(t.shape().begin(), t.shape().end()), stride(t.strides().begin(), t.strides().end());
  // One by one: GCC 12 warns falsely (-Wmaybe-uninitialized) on a braced list of these variants.
  std::vector<AttrValue> attrs;
  attrs.emplace_back(std::move(size));
  attrs.emplace_back(std::move(stride));
  attrs.emplace_back(t.offset() - root.offset());
  return make_attrs(std::move(attrs));
}

}  // namespace

Tracer::Tracer(std::string job_name) { job_->mutable_conf()->set_name(std::move(job_name)); }

Tracer::~Tracer() { stop(); }

void Tracer::start() {
  RILL_CHECK(!installed_, Runtime, "[nn.Graph] the tracer is already running");
  RILL_CHECK(eager::trace_sink() == nullptr, Runtime,
             "[nn.Graph] a graph is already being traced on this thread: call a graph from outside another's "
             "build()");
  previous_ = eager::set_trace_sink(this);
  installed_ = true;
  random_start_ = eager::take_random(0).second.to_int();
}

void Tracer::stop() {
  if (!installed_) return;
  eager::set_trace_sink(previous_);
  eager::set_trace_last_op(0);
  installed_ = false;
  random_numbers_ = eager::take_random(0).second.to_int() - random_start_;
  auto poison = std::make_shared<const Error>(
      ErrorKind::kRuntime,
      "[nn.Graph] this tensor was made inside build(), where tensors are symbolic: it has no value. Return it "
      "from build() to get its value from each graph call");
  for (auto& [storage, m] : memory_)
    if (m.origin == Origin::kTraced) m.root.storage()->set_poison(poison);
}

void Tracer::set_scope(std::string scope) { scope_ = std::move(scope); }

void Tracer::name_variable(const Tensor& t, std::string name) {
  keep_.push_back(t);
  names_[t.impl()] = std::move(name);
}

std::string Tracer::output_lbn(OpConf& conf) {
  std::string lbn = conf.name() + "/out" + std::to_string(conf.outputs_size());
  conf.add_outputs(lbn);
  return lbn;
}

void Tracer::add_input(const Tensor& t, int64_t pieces) {
  RILL_CHECK(memory_.find(t.storage().get()) == memory_.end(), Runtime,
             "[nn.Graph] input ", inputs_, " shares memory with another input or a parameter: pass a clone()");
  OpConf& c = *job_->add_ops();
  c.set_name("input-" + std::to_string(inputs_));
  c.set_op_type("input");
  auto& a = *c.mutable_attrs();
  a["index"].set_i(inputs_++);
  *c.add_output_descs() = graph::desc_to_proto(*t.meta());
  RILL_CHECK(pieces == 1 || t.ndim() > 0, Runtime, "[nn.Graph] gradient accumulation splits inputs along dim 0; "
             "input ", inputs_ - 1, " is 0-d");
  auto* shape = a["shape"].mutable_ints();  // set even when empty: a 0-d tensor
  for (int64_t d = 0; d < t.ndim(); ++d) shape->add_v(d == 0 ? t.shape()[0] * pieces : t.shape()[d]);
  a["dtype"].set_dtype(std::string(dtype_name(t.dtype())));
  c.set_scope(scope_);
  mark_global(c, t);
  std::string lbn = output_lbn(c);
  keep_.push_back(t);
  memory_[t.storage().get()] = Memory{t, lbn, 0, Origin::kInput, lbn};
  seen_[t.impl()] = Seen{lbn, 0, {}, nullptr, {}};
}

void Tracer::add_output(const Tensor& t) {
  std::string in = resolve(t);
  OpConf& c = *job_->add_ops();
  c.set_name("output-" + std::to_string(outputs_));
  c.set_op_type("output");
  (*c.mutable_attrs())["index"].set_i(outputs_++);
  c.add_inputs(in);
  c.set_scope(scope_);
  output_lbn(c);
  // What inference gives an output (a contiguous copy): with every op's descs traced, the passes that read
  // descs need no inference of the whole job before them.
  *c.add_output_descs() = graph::desc_to_proto(*make_contiguous_meta(t.shape(), t.dtype(), t.device()));
}

void Tracer::tag(OpConf& c) {
  c.set_stage(eager::trace_stage());
  const int64_t grad_of = eager::trace_grad_of();
  if (grad_of > 0 && grad_of <= static_cast<int64_t>(traced_.size())) c.set_grad_of(traced_[grad_of - 1]);
  traced_.push_back(c.name());
  eager::set_trace_last_op(static_cast<int64_t>(traced_.size()));
}

void Tracer::mark_global(OpConf& c, const Tensor& t) {
  if (t.storage()->global() == nullptr) return;
  const GlobalInfo* g = global_info(t);
  RILL_CHECK(g != nullptr, Value, "[nn.Graph] '", c.name(), "' is a view of a global tensor made outside build(): "
             "pass the global tensor itself, and view it inside build()");
  job_->mutable_conf()->set_global(true);
  (*c.mutable_attrs())["sbp"].set_s(nd_str(g->sbp));
  set_placement(*c.mutable_placement(), g->ranks, g->group, g->mesh, g->dim_groups);
}

void Tracer::set_stage_placement(int32_t stage, const std::vector<int64_t>& ranks, int64_t group,
                                 const std::vector<int64_t>& mesh, const std::vector<int64_t>& dim_groups) {
  auto& conf = *job_->mutable_conf();
  conf.set_global(true);
  while (conf.stages_size() <= stage) conf.add_stages();
  set_placement(*conf.mutable_stages(stage), ranks, group, mesh, dim_groups);
}

Tracer::Memory& Tracer::memory_of(const Tensor& t) {
  auto it = memory_.find(t.storage().get());
  if (it != memory_.end()) return it->second;
  // Eager memory read for the first time: a variable bound to this tensor.
  keep_.push_back(t);
  auto named = names_.find(t.impl());
  std::string name = named != names_.end() ? named->second : "constant-" + std::to_string(variables_.size());
  OpConf& c = *job_->add_ops();
  c.set_name(name);
  c.set_op_type("variable");
  auto& a = *c.mutable_attrs();
  a["index"].set_i(static_cast<int64_t>(variables_.size()));
  auto* shape = a["shape"].mutable_ints();  // set even when empty: a 0-d tensor
  for (int64_t s : t.shape()) shape->add_v(s);
  a["dtype"].set_dtype(std::string(dtype_name(t.dtype())));
  a["trainable"].set_b(t.impl()->requires_grad());
  c.set_scope(scope_);
  mark_global(c, t);
  std::string lbn = output_lbn(c);
  *c.add_output_descs() = graph::desc_to_proto(*t.meta());
  variables_.push_back(t);
  seen_[t.impl()] = Seen{lbn, 0, {}, nullptr, {}};
  return memory_[t.storage().get()] = Memory{t, lbn, 0, Origin::kVariable, lbn};
}

std::string Tracer::add_made_op(const OpSchema& op, std::initializer_list<std::string> inputs, AttrsSym attrs,
                                const TensorMeta& out) {
  OpConf& c = *job_->add_ops();
  c.set_name(op.name + "-" + std::to_string(next_op_++));
  c.set_op_type(op.name);
  for (const std::string& lbn : inputs) c.add_inputs(lbn);
  graph::attrs_to_proto(op, *attrs, c.mutable_attrs());
  c.set_scope(scope_);
  tag(c);
  c.set_loc(here());
  *c.add_output_descs() = graph::desc_to_proto(out);
  return output_lbn(c);
}

std::string Tracer::resolve(const Tensor& t) {
  Memory& m = memory_of(t);
  auto it = seen_.find(t.impl());
  if (it != seen_.end() && it->second.version == m.version) return it->second.lbn;
  std::string lbn;
  if (same_view(t, m.root)) {
    lbn = m.lbn;
  } else if (it != seen_.end() && it->second.parent.defined()) {
    Seen s = it->second;  // resolve() may rehash seen_
    lbn = add_made_op(*s.op, {resolve(s.parent)}, s.attrs, *t.meta());
  } else {
    RILL_CHECK(t.offset() >= m.root.offset() && last_element(t) <= last_element(m.root), Runtime,
               "[nn.Graph] build() reads a tensor whose memory reaches outside the tensor the graph binds for it (a "
               "view made outside build() of a parameter or input); pass a clone() or make the view inside build()",
               at(here()));
    static const OpSchema& restride = eager::op("restride");
    lbn = add_made_op(restride, {resolve(m.root)}, restride_attrs(t, m.root), *t.meta());
  }
  if (it == seen_.end()) keep_.push_back(t);
  Seen& s = seen_[t.impl()];
  s.lbn = lbn;
  s.version = m.version;
  return lbn;
}

OpConf& Tracer::add_op(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                       AttrsSym attrs) {
  std::vector<std::string> in;
  in.reserve(inputs.size());
  for (const Tensor& t : inputs) in.push_back(resolve(t));
  OpConf& c = *job_->add_ops();
  c.set_name(op.name + "-" + std::to_string(next_op_++));
  c.set_op_type(op.name);
  for (std::string& lbn : in) c.add_inputs(std::move(lbn));
  graph::attrs_to_proto(op, *attrs, c.mutable_attrs());
  for (size_t i = 0; i < scalars.size(); ++i) {
    Scalar s = scalars[i];
    // A random op's offset is kept relative to the trace's first draw; each launch adds its own.
    if (op.flags.random && i == 1) s = Scalar(s.to_int() - random_start_);
    *c.add_scalars() = graph::scalar_to_proto(s);
  }
  c.set_scope(scope_);
  tag(c);
  c.set_loc(here());
  return c;
}

void Tracer::on_call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                     AttrsSym attrs, std::span<const Tensor> outputs) {
  if (outputs.size() == 1 && copies_blob(op, inputs, outputs[0])) {  // a clone (Note [A copy is its source's blob])
    made_by_trace(outputs[0], resolve(inputs[0]));
    return;
  }
  OpConf& c = add_op(op, inputs, scalars, attrs);
  for (const Tensor& out : outputs) {
    *c.add_output_descs() = graph::desc_to_proto(*out.meta());
    made_by_trace(out, output_lbn(c));
  }
}

void Tracer::made_by_trace(const Tensor& out, const std::string& lbn) {
  keep_.push_back(out);
  memory_[out.storage().get()] = Memory{out, lbn, 0, Origin::kTraced, lbn};
  seen_[out.impl()] = Seen{lbn, 0, {}, nullptr, {}};
}

bool Tracer::copies_blob(const OpSchema& op, std::span<const Tensor> inputs, const Tensor& out) {
  static const OpSchema& cast = eager::op("cast");
  if (&op != &cast || inputs.size() != 1) return false;
  const Tensor& src = inputs[0];
  if (src.storage() == out.storage() || !same_view(src, out)) return false;  // same meta and offset
  auto it = memory_.find(src.storage().get());
  // A traced root's value: a variable's or an input's would make an assign write a binding into another.
  return it != memory_.end() && it->second.origin == Origin::kTraced && same_view(src, it->second.root);
}

void Tracer::on_write(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                      AttrsSym attrs, const Tensor& out) {
  Storage& storage = *out.storage();
  const bool fresh = memory_.find(&storage) == memory_.end() && !storage.allocated() && !storage.external() &&
                     storage.writes_in_flight().load(std::memory_order_acquire) == 0;
  if (fresh && out.offset() == 0 && out.is_contiguous() &&
      static_cast<size_t>(out.numel()) * dtype_itemsize(out.dtype()) == storage.nbytes()) {
    // Memory nothing has written yet (an empty() inside build, filled now): the trace's own, not a variable.
    OpConf& c = add_op(op, inputs, scalars, attrs);
    *c.add_output_descs() = graph::desc_to_proto(*out.meta());
    made_by_trace(out, output_lbn(c));
    return;
  }
  RILL_CHECK(!fresh, Runtime,
             "[nn.Graph] build() writes in place (", op.name, ") into part of a tensor made by empty() inside "
             "build(), whose other elements have no value: make it with zeros() or full()", at(here()));
  Memory& m = memory_of(out);
  RILL_CHECK(m.origin != Origin::kInput, Runtime, "[nn.Graph] build() writes in place (", op.name,
             ") into its input: clone() the input first", at(here()));
  const bool whole = same_view(out, m.root);
  RILL_CHECK(whole || m.root.is_contiguous(), Runtime, "[nn.Graph] build() writes in place (", op.name,
             ") into part of a strided tensor: write into a contiguous() copy", at(here()));
  std::string lbn;
  if (whole && copies_blob(op, inputs, out)) {
    // Note [A copy is its source's blob]
    // A copy of a whole traced value into memory of the same meta (the optimizer writing its results back into
    // the parameters and their state with copy_; autograd's clone of a gradient into .grad) is that value: a blob
    // is never written again, so the memory's value is the source's blob itself, not a cast of it that
    // redundant_cast_elimination would remove later (a quarter of a transformer's traced ops with AdamW, each
    // walked by the passes before that one). A copy of a variable or an input stays a cast: an assign must not
    // write one binding into another.
    lbn = resolve(inputs[0]);
  } else {
    OpConf& c = add_op(op, inputs, scalars, attrs);
    lbn = output_lbn(c);
    if (whole) {
      *c.add_output_descs() = graph::desc_to_proto(*out.meta());
    } else {
      // A write into part of the memory: the op makes the part's new value, and restride_scatter the whole's.
      *c.add_output_descs() = graph::desc_to_proto(*make_contiguous_meta(out.shape(), out.dtype(), out.device()));
      static const OpSchema& scatter = eager::op("restride_scatter");
      const Memory& root = memory_of(out);  // add_op may have rehashed memory_
      lbn = add_made_op(scatter, {root.lbn, lbn}, restride_attrs(out, root.root), *root.root.meta());
    }
  }
  Memory& written = memory_of(out);
  written.lbn = lbn;
  ++written.version;
  // A whole write's tensor reads the new blob; a part reads it again through its view (resolve).
  if (whole) seen_[out.impl()] = Seen{lbn, written.version, {}, nullptr, {}};
}

void Tracer::on_view(const OpSchema& op, const Tensor& x, AttrsSym attrs, const Tensor& y) {
  std::string lbn = add_made_op(op, {resolve(x)}, attrs, *y.meta());
  keep_.push_back(y);
  seen_[y.impl()] = Seen{lbn, memory_of(x).version, x, &op, attrs};
}

void Tracer::on_sync(const Tensor& t, const char* what) {
  auto it = memory_.find(t.storage().get());
  if (it == memory_.end() || it->second.origin != Origin::kTraced) return;
  RILL_FAIL(Runtime, "[nn.Graph] ", what, " needs the value of a tensor made inside build(), but while a graph is "
            "traced tensors are symbolic (shape and dtype only)", at(here()),
            ": compute it outside build(), or return the tensor from build() and read it after the call");
}

ArenaJob Tracer::finish(bool train, int32_t gradient_accumulation_steps) {
  stop();
  // An assign is in the scope of the op that wrote its value: the optimizer's updates run once per iteration
  // under gradient accumulation, but a buffer the forward writes (BatchNorm's running mean) is written by each
  // piece in turn, as eager's micro-batches write it (Note [Pieces and the once part] in op_graph.cpp).
  std::unordered_map<std::string_view, std::string_view> scope_of;  // op name -> scope
  for (const OpConf& op : job_->ops()) scope_of.emplace(op.name(), op.scope());
  for (size_t i = 0; i < variables_.size(); ++i) {
    const Memory& m = memory_.at(variables_[i].storage().get());
    if (m.version == 0) continue;
    auto writer = scope_of.find(std::string_view(m.lbn).substr(0, m.lbn.rfind('/')));
    OpConf& c = *job_->add_ops();
    c.set_name("assign-" + std::to_string(i));
    c.set_op_type("assign");
    c.add_inputs(m.bound_lbn);
    c.add_inputs(m.lbn);
    c.set_scope(writer != scope_of.end() && writer->second != kOptimizerScope ? std::string(writer->second)
                                                                               : std::string(kOptimizerScope));
  }
  JobConf& conf = *job_->mutable_conf();
  conf.set_train(train);
  conf.set_gradient_accumulation_steps(gradient_accumulation_steps);
  if (conf.global()) {
    // The k-th global job the process traces (the same on every rank: they trace in one order, whichever rank then
    // compiles it) tags its transfers from k << 16, so a rank that runs ahead into the next graph sends nothing
    // the last one's receives take.
    static std::atomic<int64_t> global_jobs{0};
    conf.set_transfer_tags((global_jobs.fetch_add(1) % 32767) << 16);
  }
  return std::move(job_);
}

}  // namespace rill::graph
