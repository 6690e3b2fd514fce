// sbp_lowering: a global job made this rank's (Note [SBP signatures] in ops/sbp.cpp, Note [Boxing] below).
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rill/graph/attrs.h"
#include "rill/graph/infer.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

// Note [Boxing]
// The job as traced is logical: every blob has the shape of the whole tensor. The pass walks it in topological
// order and gives each blob an SBP: a variable's or an input's is its global tensor's (a tensor of this process
// bound in a global job is broadcast: each rank has the same lr, the same step counter); an op takes, of the
// signatures its rule offers, the one whose inputs cost the fewest bytes to box from their producers' SBPs,
// ties going to the rule's order (fewer boxing ops first). An optimizer update keeps the SBP of the variable it
// updates (it writes the variable in place); an assign boxes its value to its variable's SBP, an output its
// partial sum to broadcast. Then each boxed edge gets its boxing ops, on this rank's shapes:
//   P -> B     _boxing_all_reduce            S(i) -> B   _boxing_all_gather(i)
//   P -> S(i)  _boxing_reduce_scatter(i)     B -> S(i)   slice: this rank's part (a view, no copy)
//   B -> P     _boxing_partial (the placement's first rank keeps it, the others have zeros)
//   S(i) -> S(j), S -> P: through B.
// A boxed value is made once and shared by its consumers. The collectives are chained by ctrl edges in the job's
// order, so every rank calls them in one order whatever order its actors become ready in. Variables and inputs
// get their local shapes, ops whose attrs hold sizes their local attrs (OpSchema::local_attrs), and inference
// gives every blob its local desc, which is checked against the SBP: a rule that gets an op wrong stops here.

using Sig = SbpSignature;

int64_t desc_bytes(const plan::TensorDesc& d) {
  MetaSym m = meta_from_proto(d);
  return m->numel * static_cast<int64_t>(dtype_itemsize(m->dtype));
}

// Bytes each rank receives to change from into to (a tie-break of 1 per boxing op: a local slice is not free).
int64_t boxing_cost(const Sbp& from, const Sbp& to, int64_t bytes) {
  if (from == to) return 0;
  if (from.is_broadcast()) return 1;                        // a slice, or zeros on all but one rank
  if (from.is_partial()) return to.is_broadcast() ? 2 * bytes : bytes;  // all-reduce, reduce-scatter
  return to.is_broadcast() ? bytes : bytes + 1;             // all-gather (then a slice, or a partial)
}

bool splits_evenly(const Sbp& s, const plan::TensorDesc& d, int64_t n) {
  if (!s.is_split()) return true;
  return s.axis < d.shape_size() && d.shape(s.axis) % n == 0;
}

class Lowering {
 public:
  explicit Lowering(Job& job)
      : job_(job), graph_(job), names_(graph_), n_(job.conf().placement_size()),
        rank_(job.conf().rank_in_placement()), group_(job.conf().placement_group()) {}

  void run() {
    RILL_CHECK(job_pieces(job_) == 1, Value, "[nn.Graph] a graph over a placement runs one piece per call: "
               "gradient accumulation (set_gradient_accumulation_steps) with global tensors is not supported yet");
    const int original = job_.ops_size();
    for (const OpConf& op : job_.ops())
      for (int k = 0; k < op.output_descs_size(); ++k)
        logical_shapes_[op.outputs(k)] = meta_from_proto(op.output_descs(k))->shape;
    for (int i = 0; i < original; ++i) choose(i);
    for (int i = 0; i < original; ++i) lower(i);
    sort_topologically(job_);
    InferStats stats;
    infer_job(job_, stats);
    check_local_descs();
  }

 private:
  const plan::TensorDesc& desc_of(const std::string& lbn) {
    BlobRef p = graph_.producer(lbn);
    RILL_CHECK(p.op >= 0, Runtime, "[graph] no op produces '", lbn, "'");
    return job_.ops(p.op).output_descs(p.out);
  }

  void choose(int i) {
    OpConf& op = *job_.mutable_ops(i);
    const std::string& type = op.op_type();
    Sig sig;
    if (is_binding_op(op)) {
      auto it = op.attrs().find("sbp");
      sig.out.push_back(it == op.attrs().end() ? Sbp::broadcast() : Sbp::parse(it->second.s()));
      RILL_CHECK(splits_evenly(sig.out[0], op.output_descs(0), n_), Value, "[", op.name(), "] a tensor of shape ",
                 shape_str(meta_from_proto(op.output_descs(0))->shape), " cannot be split as ", sig.out[0].str(),
                 " over ", n_, " ranks: make the dim a multiple of the ranks", at(op));
    } else if (type == kOutput) {
      const Sbp from = sbp_[op.inputs(0)];
      sig.in.push_back(from.is_partial() ? Sbp::broadcast() : from);
      auto& sbps = *job_.mutable_conf()->mutable_output_sbps();
      const auto index = static_cast<int>(int_attr(op, "index"));
      while (sbps.size() <= index) sbps.Add("B");
      sbps[index] = sig.in[0].str();
    } else if (type == kAssign) {
      const Sbp target = sbp_[op.inputs(0)];
      sig.in = {target, target};
    } else {
      const OpSchema* schema = schema_of(op);
      RILL_CHECK(schema != nullptr, Runtime, "[", op.name(), "] a global job cannot have a '", type, "' op yet",
                 at(op));
      sig = pick(op, *schema);
    }
    for (size_t k = 0; k < sig.out.size(); ++k) sbp_[op.outputs(static_cast<int>(k))] = sig.out[k];
    for (const Sbp& s : sig.in) op.add_in_sbps(s.str());
    for (const Sbp& s : sig.out) op.add_out_sbps(s.str());
    chosen_.emplace(i, std::move(sig));
  }

  Sig pick(const OpConf& op, const OpSchema& schema) {
    std::vector<MetaSym> ins, outs;
    for (const std::string& lbn : op.inputs()) ins.push_back(meta_from_proto(desc_of(lbn)));
    for (const plan::TensorDesc& d : op.output_descs()) outs.push_back(meta_from_proto(d));
    AttrsSym attrs = attrs_from_proto(schema, op.attrs());
    SbpContext ctx{schema, ins, outs, *attrs};
    std::vector<Sig> candidates = ops::sbp_signatures(ctx);
    const Sig* best = nullptr;
    int64_t best_cost = 0;
    for (const Sig& sig : candidates) {
      if (!acceptable(op, schema, sig)) continue;
      int64_t cost = 0;
      for (int k = 0; k < op.inputs_size(); ++k)
        cost += boxing_cost(sbp_[op.inputs(k)], sig.in[static_cast<size_t>(k)], desc_bytes(desc_of(op.inputs(k))));
      if (best == nullptr || cost < best_cost) {
        best = &sig;
        best_cost = cost;
      }
    }
    RILL_CHECK(best != nullptr, Runtime, "[", op.name(), "] no SBP signature of '", op.op_type(),
               "' fits its inputs", at(op));
    return *best;
  }

  bool acceptable(const OpConf& op, const OpSchema& schema, const Sig& sig) {
    if (sig.in.size() != static_cast<size_t>(op.inputs_size()) ||
        sig.out.size() != static_cast<size_t>(op.outputs_size()))
      return false;
    bool all_broadcast = true;
    for (int k = 0; k < op.inputs_size(); ++k) {
      all_broadcast &= sig.in[static_cast<size_t>(k)].is_broadcast();
      if (!splits_evenly(sig.in[static_cast<size_t>(k)], desc_of(op.inputs(k)), n_)) return false;
    }
    for (int k = 0; k < op.outputs_size(); ++k)
      if (!splits_evenly(sig.out[static_cast<size_t>(k)], op.output_descs(k), n_)) return false;
    // Every rank draws the same numbers: only the whole tensor on every rank gets the masks one process would.
    if (schema.flags.random && !all_broadcast) return false;
    // An update writes its variable in place: it keeps the variable's SBP.
    if (schema.flags.updates_in_place)
      for (int k = 0; k < op.outputs_size(); ++k) {
        const int in = ops::updated_input(schema, k, op.inputs_size());
        if (in >= 0 && sbp_[op.inputs(in)] != sig.in[static_cast<size_t>(in)]) return false;
      }
    return true;
  }

  void lower(int i) {
    const Sig& sig = chosen_.at(i);
    OpConf& op = *job_.mutable_ops(i);
    if (is_binding_op(op)) {
      auto& shape = *(*op.mutable_attrs())["shape"].mutable_ints()->mutable_v();
      if (sig.out[0].is_split()) shape[sig.out[0].axis] /= n_;
      return;
    }
    for (int k = 0; k < op.inputs_size(); ++k) {
      const std::string lbn = op.inputs(k);
      const Sbp from = sbp_[lbn], to = sig.in[static_cast<size_t>(k)];
      if (from != to) op.set_inputs(k, boxed(lbn, from, to, op));
    }
    const OpSchema* schema = schema_of(op);
    if (schema == nullptr || schema->local_attrs == nullptr) return;
    bool split = false;
    for (const Sbp& s : sig.out) split |= s.is_split();
    for (const Sbp& s : sig.in) split |= s.is_split();
    if (!split) return;
    std::vector<MetaSym> ins, outs;
    for (const std::string& lbn : op.inputs()) ins.push_back(meta_from_proto(logical_desc(lbn)));
    for (const plan::TensorDesc& d : op.output_descs()) outs.push_back(meta_from_proto(d));
    AttrsSym logical = attrs_from_proto(*schema, op.attrs());
    SbpContext ctx{*schema, ins, outs, *logical};
    AttrsSym local = schema->local_attrs(ctx, sig, n_);
    op.mutable_attrs()->clear();
    attrs_to_proto(*schema, *local, op.mutable_attrs());
  }

  // The logical desc of lbn, which may be a boxed blob (whose producer is an op this pass added).
  const plan::TensorDesc& logical_desc(const std::string& lbn) {
    auto it = logical_of_.find(lbn);
    return it == logical_of_.end() ? desc_of(lbn) : desc_of(it->second);
  }

  // lbn (of SBP from) as to, for consumer: the boxing ops' last output, made once per (lbn, to).
  std::string boxed(const std::string& lbn, const Sbp& from, const Sbp& to, const OpConf& consumer) {
    auto [it, fresh] = boxed_.emplace(lbn + "#" + to.str(), std::string());
    if (!fresh) return it->second;
    const plan::TensorDesc& logical = desc_of(lbn);
    std::string out = lbn;
    if (from.is_partial()) {
      out = to.is_split() ? collective("_boxing_reduce_scatter", out, to.axis, consumer)
                          : collective("_boxing_all_reduce", out, -1, consumer);
      if (to.is_partial()) out = lbn;
    } else {
      if (from.is_split()) out = collective("_boxing_all_gather", out, from.axis, consumer);
      if (to.is_split()) {
        out = slice(out, to.axis, logical.shape(to.axis) / n_, logical.dtype(), consumer);
      } else if (to.is_partial()) {
        OpConf* p = added("_boxing_partial", out, consumer);
        (*p->mutable_attrs())["keep"].set_b(rank_ == 0);
        out = p->outputs(0);
      }
    }
    logical_of_[out] = lbn;
    return it->second = out;
  }

  OpConf* added(std::string_view type, const std::string& in, const OpConf& consumer) {
    const std::string base = in.substr(0, in.find('/')) + "-" + std::string(type.substr(1));
    OpConf* op = add_op(job_, names_.fresh(base), type, consumer.scope(), 1);
    op->set_loc(consumer.loc());
    op->add_inputs(in);
    return op;
  }

  std::string collective(std::string_view type, const std::string& in, int32_t dim, const OpConf& consumer) {
    OpConf* op = added(type, in, consumer);
    auto& attrs = *op->mutable_attrs();
    if (dim >= 0) {
      attrs["dim"].set_i(dim);
      attrs["world"].set_i(n_);
    }
    attrs["group"].set_i(group_);
    if (!last_collective_.empty()) op->add_ctrl_inputs(last_collective_);
    last_collective_ = op->name();
    return op->outputs(0);
  }

  // This rank's part along dim: a view, made dense by a cast to its own dtype unless dim is 0 (the consumers, as
  // traced, read what eager gave them, which may be dense only).
  std::string slice(const std::string& in, int32_t dim, int64_t length, const std::string& dtype,
                    const OpConf& consumer) {
    OpConf* op = added("_slice", in, consumer);
    op->set_op_type("slice");
    auto& attrs = *op->mutable_attrs();
    attrs["dim"].set_i(dim);
    attrs["start"].set_i(rank_ * length);
    attrs["end"].set_i((rank_ + 1) * length);
    attrs["step"].set_i(1);
    if (dim == 0) return op->outputs(0);
    OpConf* dense = added("_dense", op->outputs(0), consumer);
    dense->set_op_type("cast");
    (*dense->mutable_attrs())["dtype"].set_dtype(dtype);
    return dense->outputs(0);
  }

  void check_local_descs() {
    for (const OpConf& op : job_.ops()) {
      for (int k = 0; k < op.out_sbps_size(); ++k) {
        auto it = logical_shapes_.find(op.outputs(k));
        if (it == logical_shapes_.end()) continue;
        const Shape want = local_shape(it->second, Sbp::parse(op.out_sbps(k)), n_);
        const Shape got = meta_from_proto(op.output_descs(k))->shape;
        RILL_CHECK(got == want, Runtime, "[graph] the SBP rule of '", op.op_type(), "' is wrong: ", op.name(),
                   " output ", k, " as ", op.out_sbps(k), " should have shape ", shape_str(want),
                   " on each rank, but has ", shape_str(got), at(op));
      }
    }
  }

  Job& job_;
  OpGraph graph_;
  NameSet names_;
  int64_t n_;
  int64_t rank_;
  int64_t group_;
  std::unordered_map<std::string, Sbp> sbp_;            // the SBP of each blob of the job as traced
  std::map<int, Sig> chosen_;                           // by op index
  std::unordered_map<std::string, std::string> boxed_;  // "lbn#sbp" -> its boxed blob
  std::unordered_map<std::string, std::string> logical_of_;  // boxed blob -> the blob it boxes
  std::unordered_map<std::string, Shape> logical_shapes_;    // every traced blob's logical shape
  std::string last_collective_;
};

}  // namespace

void sbp_lowering(Job& job) {
  if (job.conf().placement_size() == 0) return;
  Lowering(job).run();
}

}  // namespace rill::graph
