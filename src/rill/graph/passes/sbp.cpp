// sbp_lowering: a global job made one rank's (Note [SBP signatures] in ops/sbp.cpp, Note [Boxing] below).
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
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
// The job as traced is logical: every blob has the shape of the whole tensor. place_ops, the first pass, gives
// each op a placement (OpConf.placement), which the passes after it keep (CSE and fusion join only ops of one
// placement): a global variable's or input's own; a to_global's, the one it names (x.to_global(placement, sbp)
// inside build()); a staged op's, its stage's; a gradient op's, that of the op it is the gradient of (Note
// [Stages of a trace] in eager/trace.h); an output's, that of its value; an assign's, that of its value where it
// has one (a step counter of this process updated with a stage's parameter is updated on that stage's ranks); any
// other op's, that of its input computed last (the activation it continues); an op a later pass adds (an acc) takes
// that rule too. A tensor of this process (the lr, a constant) has none: every rank that needs it has it, and so
// has an op computed from such tensors only.
// Then sbp_signatures, the last logical pass, gives each op in topological order an SBP signature: a variable's
// or an input's is its global tensor's (a tensor of this process is broadcast); a to_global's, the SBP it names;
// an op takes, of the signatures its rule offers, the one whose inputs cost the fewest bytes to box from their
// producers' SBPs, ties going to the rule's order (fewer boxing ops first). An optimizer update keeps the SBP of
// the variable it updates (it writes it in place); an assign boxes its value to its variable's SBP, an output
// its partial sum to broadcast. The signatures are recorded in the job (OpConf.in_sbps, out_sbps): the logical
// job is the same for every rank, and one rank can make it for all (Note [Separate compilation] in
// graph/separate.cpp). sbp_lowering, the first pass of a rank, gives each boxed edge inside a placement its
// boxing ops, on this rank's shapes:
//   P -> B     _boxing_all_reduce            S(i) -> B   _boxing_all_gather(i)
//   P -> S(i)  _boxing_reduce_scatter(i)     B -> S(i)   slice: this rank's part
//   B -> P     _boxing_partial (the placement's first rank keeps it, the others have zeros)
//   S(i) -> S(j), S -> P: through B.
// On a mesh (Note [Meshes] in core/sbp.h) a value's SBP changes one dim at a time, each in the lines of that dim
// (their groups), as above on the shape the earlier dims leave each line: from the last dim down to the first dim
// that changes, every dim not broadcast is made broadcast (the first changing dim straight to its new SBP), then
// the later dims are made what the consumer asks, first to last. An op's signature on a mesh is one of its rule's
// signatures per dim, chosen dim after dim on the shapes the earlier dims leave.
// A value crossing placements is boxed to B on its own, sent by each of its ranks to the destination ranks it
// serves (destination k from source k mod the source's size; Note [Graph transfers] in comm/boxing.cpp) and
// boxed from B on the destination. On a placement of one rank every SBP is the whole tensor: nothing is boxed.
// A boxed value is made once and shared by its consumers. The collectives are chained by ctrl edges in the job's
// order, one chain per part of the iteration (the piece loop, the once part), so the ranks of a placement call
// them in one order whatever order their actors become ready in. Last, the ops of other ranks go, with what only they needed; variables and inputs
// get their local shapes, ops whose attrs hold sizes their local attrs (OpSchema::local_attrs), and inference
// gives every blob its local desc, which is checked against its SBP: a rule that gets an op wrong stops here.

using Sig = SbpSignature;

// An op's signature on a mesh: an SBP per mesh dim for each input and output.
struct NdSig {
  std::vector<NdSbp> in, out;
  // The 1-D signature of dim d.
  Sig dim(size_t d) const {
    Sig s;
    for (const NdSbp& x : in) s.in.push_back(x[d]);
    for (const NdSbp& x : out) s.out.push_back(x[d]);
    return s;
  }
};

NdSbp all_broadcast(int dims) { return NdSbp(static_cast<size_t>(dims), Sbp::broadcast()); }

// x.to_global(placement, sbp) traced inside build (ops/boxing.cpp): its input is boxed (or sent) to what it asks.
constexpr std::string_view kToGlobal = "_to_global";
// Transfers per job: the tags of the k-th global graph of the program start at k times it.
constexpr size_t kTagsPerJob = 1 << 16;

// Bytes each rank receives to change from into to (a tie-break of 1 per boxing op: a local slice is not free).
int64_t boxing_cost(const Sbp& from, const Sbp& to, int64_t bytes) {
  if (from == to) return 0;
  if (from.is_broadcast()) return 1;                                    // a slice, or zeros on all but one rank
  if (from.is_partial()) return to.is_broadcast() ? 2 * bytes : bytes;  // all-reduce, reduce-scatter
  return to.is_broadcast() ? bytes : bytes + 1;                         // all-gather (then a slice, or a partial)
}

bool splits_evenly(const Sbp& s, const Shape& shape, int64_t n) {
  if (!s.is_split()) return true;
  return s.axis < static_cast<int32_t>(shape.size()) && shape[static_cast<size_t>(s.axis)] % n == 0;
}

// Where an op runs: its ranks (none: every rank that needs it) and their process group, and on a mesh its shape
// and the groups of its lines (Note [Meshes] in core/sbp.h).
struct Place {
  std::vector<int64_t> ranks;
  int64_t group = 0;
  std::vector<int64_t> mesh;        // empty: one dim
  std::vector<int64_t> dim_groups;  // per dim, its lines' groups; empty: one dim
  int64_t size() const { return std::max<int64_t>(1, static_cast<int64_t>(ranks.size())); }
  bool anywhere() const { return ranks.empty(); }
  int dims() const { return mesh.empty() ? 1 : static_cast<int>(mesh.size()); }
  int64_t dim_size(int d) const { return mesh.empty() ? size() : mesh[static_cast<size_t>(d)]; }
  std::vector<int64_t> shape() const { return mesh.empty() ? std::vector<int64_t>{size()} : mesh; }
  /** rank's position in ranks, or -1. */
  int64_t position(int64_t rank) const {
    auto it = std::find(ranks.begin(), ranks.end(), rank);
    return it == ranks.end() ? -1 : it - ranks.begin();
  }
  /** The line of dim d through rank (one of ranks): its ranks in order along d, and its group. */
  Place line(int d, int64_t rank) const {
    if (mesh.empty()) return Place{ranks, group, {}, {}};
    std::vector<int64_t> coord(mesh.size());
    for (int64_t p = position(rank), e = static_cast<int64_t>(mesh.size()) - 1; e >= 0; --e) {
      coord[static_cast<size_t>(e)] = p % mesh[static_cast<size_t>(e)];
      p /= mesh[static_cast<size_t>(e)];
    }
    Place out;
    int64_t line = 0, groups_before = 0;  // the line's number among dim d's; the groups of dims before d
    for (size_t e = 0; e < mesh.size(); ++e) {
      if (static_cast<int>(e) != d) line = line * mesh[e] + coord[e];
      if (static_cast<int>(e) < d) groups_before += size() / mesh[e];
    }
    for (int64_t c = 0; c < mesh[static_cast<size_t>(d)]; ++c) {
      coord[static_cast<size_t>(d)] = c;
      int64_t flat = 0;
      for (size_t e = 0; e < mesh.size(); ++e) flat = flat * mesh[e] + coord[e];
      out.ranks.push_back(ranks[static_cast<size_t>(flat)]);
    }
    out.group = dim_groups.at(static_cast<size_t>(groups_before + line));
    return out;
  }
};

Place place_of(const Placement& p) {
  return {placement_ranks(p), p.group(), {p.mesh().begin(), p.mesh().end()},
          {p.dim_groups().begin(), p.dim_groups().end()}};
}

void write_place(Placement& p, const Place& place) {
  set_placement(p, place.ranks, place.group, place.mesh, place.dim_groups);
}

// What each rank of a line of n holds, under s, of a value of that shape.
Shape split_by(Shape shape, const Sbp& s, int64_t n) {
  if (s.is_split()) shape[static_cast<size_t>(s.axis)] /= n;
  return shape;
}

// What a line of dim `dims` holds of a value of that shape: split by sbp's first `dims` dims.
Shape split_shape(Shape shape, const NdSbp& sbp, const Place& place, size_t dims) {
  for (size_t d = 0; d < dims; ++d) shape = split_by(std::move(shape), sbp[d], place.dim_size(static_cast<int>(d)));
  return shape;
}

bool splits_evenly(const NdSbp& sbp, const plan::TensorDesc& desc, const Place& place) {
  Shape shape = meta_from_proto(desc)->shape;
  for (size_t d = 0; d < sbp.size(); ++d) {
    const int64_t n = place.dim_size(static_cast<int>(d));
    if (!splits_evenly(sbp[d], shape, n)) return false;
    shape = split_by(std::move(shape), sbp[d], n);
  }
  return true;
}

// The placement of op i's input computed last (the activation it continues), or none.
template <typename Places>
Place placed_input(const OpGraph& g, const Places& places, int i) {
  int last = -1;
  for (int k = 0; k < g.op(i).inputs_size(); ++k) {
    const BlobRef from = g.input_producer(i, k);
    if (from.op >= 0 && !places[from.op].anywhere() && from.op > last) last = from.op;
  }
  return last >= 0 ? places[last] : Place{};
}

// The placement of each op of a traced global job (Note [Boxing], first paragraph).
std::vector<Place> placements(const Job& job, const OpGraph& g) {
  std::vector<Place> places(static_cast<size_t>(g.size()));
  for (int i = 0; i < g.size(); ++i) {
    const OpConf& op = g.op(i);
    Place& p = places[i];
    const auto ranks_attr = op.attrs().find("placement");
    if (is_binding_op(op)) {
      p = place_of(op.placement());  // its global tensor's (none: a tensor of this process)
    } else if (op.op_type() == kToGlobal && !ranks_attr->second.ints().v().empty()) {
      auto ints = [&](const char* name) -> std::vector<int64_t> {
        auto it = op.attrs().find(name);
        if (it == op.attrs().end()) return {};
        return {it->second.ints().v().begin(), it->second.ints().v().end()};
      };
      p = {ints("placement"), op.attrs().at("group").i(), ints("mesh"), ints("dim_groups")};
    } else if (op.stage() > 0) {
      RILL_CHECK(op.stage() <= job.conf().stages_size(), Runtime, "[", op.name(), "] stage ", op.stage() - 1,
                 " has no placement", at(op));
      p = place_of(job.conf().stages(op.stage() - 1));
    } else if (const int f = op.grad_of().empty() ? -1 : g.find(op.grad_of()); f >= 0 && f < i) {
      p = places[f];  // a gradient runs where its forward op does
    } else if (op.op_type() == kOutput) {
      const BlobRef from = g.input_producer(i, 0);
      if (from.op >= 0) p = places[from.op];
    } else if (op.op_type() == kAssign) {  // where its value is made, else where its variable is
      const BlobRef value = g.input_producer(i, 1), variable = g.input_producer(i, 0);
      if (value.op >= 0 && !places[value.op].anywhere()) p = places[value.op];
      else if (variable.op >= 0) p = places[variable.op];
    } else {
      p = placed_input(g, places, i);
    }
  }
  return places;
}

class Lowering {
 public:
  explicit Lowering(Job& job)
      : job_(job), graph_(job), names_(graph_), rank_(job.conf().rank()), parts_(op_parts(graph_)) {}

  // The logical half (sbp_signatures): every op's placement and signature, recorded in the job.
  void choose_signatures() {
    places_.resize(static_cast<size_t>(job_.ops_size()));
    for (int i = 0; i < job_.ops_size(); ++i) place(i);
    for (int i = 0; i < job_.ops_size(); ++i) choose(i);
  }

  // The rank's half (sbp_lowering): the boxing the recorded signatures need, and the job made this rank's.
  void lower_for_rank() {
    const int original = job_.ops_size();
    for (const OpConf& op : job_.ops())
      for (int k = 0; k < op.output_descs_size(); ++k)
        logical_shapes_[op.outputs(k)] = meta_from_proto(op.output_descs(k))->shape;
    places_.resize(static_cast<size_t>(original));
    for (int i = 0; i < original; ++i) recorded(i);
    number_transfers(original);
    keep_.assign(static_cast<size_t>(original), true);
    for (int i = 0; i < original; ++i) {  // in the job's order: so are the collectives chained
      anchor_ = {i, 0};
      lower(i);
      anchor_ = {i, 2};
      send_to_other_placements(i);
    }
    keep_.resize(static_cast<size_t>(job_.ops_size()), true);
    place_added_ops(original);
    remove_ops(job_, keep_);
    remove_unneeded();
    sort_topologically(job_);
    bind_in_order();
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

  bool mine(int i) const { return places_[i].anywhere() || places_[i].position(rank_) >= 0; }
  // Whether op i's input k comes from another placement (a transfer).
  bool crosses(int i, int k) const {
    const BlobRef p = graph_.input_producer(i, k);
    if (p.op < 0 || places_[p.op].anywhere() || places_[i].anywhere()) return false;
    const Place &from = places_[p.op], &to = places_[i];
    RILL_CHECK(from.ranks != to.ranks || from.mesh == to.mesh, Value, "[", job_.ops(i).name(), "] reads a value "
               "made on the same ranks arranged as another mesh (", shape_str(from.shape()), " and ",
               shape_str(to.shape()), "); keep one mesh for these ranks", at(job_.ops(i)));
    return from.ranks != to.ranks;
  }
  // The SBP op i's input k has where op i runs: a transfer arrives broadcast, and so does a value of this process
  // (made anywhere: every rank has all of it).
  NdSbp arriving(int i, int k) {
    const BlobRef p = graph_.input_producer(i, k);
    if (crosses(i, k) || (p.op >= 0 && places_[p.op].anywhere())) return all_broadcast(places_[i].dims());
    return sbp_[job_.ops(i).inputs(k)];
  }

  // The placement place_ops gave op i, or for an op a later pass added (an acc, a mean), that of its input
  // computed last.
  void place(int i) {
    const OpConf& op = job_.ops(i);
    Place& p = places_[i];
    if (placement_size(op.placement()) > 0) {
      p = place_of(op.placement());
      return;
    }
    p = Place{placed_input(graph_, places_, i)};
    write_place(*job_.mutable_ops(i)->mutable_placement(), p);
  }

  // Op i's placement and signature as sbp_signatures recorded them.
  void recorded(int i) {
    const OpConf& op = job_.ops(i);
    RILL_CHECK(op.in_sbps_size() == op.inputs_size() && op.out_sbps_size() <= op.outputs_size(), Runtime, "[",
               op.name(), "] has no SBP signature: run sbp_signatures on the global job before sbp_lowering", at(op));
    places_[i] = place_of(op.placement());
    NdSig sig;
    for (const std::string& s : op.in_sbps()) sig.in.push_back(parse_nd(s));
    for (const std::string& s : op.out_sbps()) sig.out.push_back(parse_nd(s));
    for (size_t k = 0; k < sig.out.size(); ++k) sbp_[op.outputs(static_cast<int>(k))] = sig.out[k];
    chosen_.emplace(i, std::move(sig));
  }

  void choose(int i) {
    OpConf& op = *job_.mutable_ops(i);
    const std::string& type = op.op_type();
    const Place& here = places_[i];
    NdSig sig;
    if (is_binding_op(op)) {
      auto it = op.attrs().find("sbp");
      sig.out.push_back(it == op.attrs().end() ? all_broadcast(here.dims()) : parse_nd(it->second.s()));
      RILL_CHECK(splits_evenly(sig.out[0], op.output_descs(0), here), Value, "[", op.name(), "] a tensor of shape ",
                 shape_str(meta_from_proto(op.output_descs(0))->shape), " cannot be split as ", nd_str(sig.out[0]),
                 " over ", shape_str(here.shape()), " ranks: make the dim a multiple of the ranks", at(op));
    } else if (type == kOutput) {
      NdSbp from = arriving(i, 0);
      for (Sbp& s : from)
        if (s.is_partial()) s = Sbp::broadcast();
      sig.in.push_back(from);
      const auto index = static_cast<int>(int_attr(op, "index"));
      auto& conf = *job_.mutable_conf();
      while (conf.output_sbps_size() <= index) conf.add_output_sbps("B");
      while (conf.output_placements_size() <= index) conf.add_output_placements();
      conf.set_output_sbps(index, nd_str(sig.in[0]));
      *conf.mutable_output_placements(index) = op.placement();
    } else if (type == kAssign) {
      const NdSbp target = arriving(i, 0);  // the variable's (all broadcast: one of this process)
      sig.in = {target, target};
    } else if (type == kToGlobal) {  // what the user asked for
      const NdSbp target = parse_nd(op.attrs().at("sbp").s());
      RILL_CHECK(static_cast<int>(target.size()) == here.dims(), Value, "[", op.name(), "] to_global: ",
                 nd_str(target), " is not one SBP per dim of a mesh of ", here.dims(), " dims", at(op));
      RILL_CHECK(splits_evenly(target, op.output_descs(0), here), Value, "[", op.name(), "] to_global: a tensor of "
                 "shape ", shape_str(meta_from_proto(op.output_descs(0))->shape), " cannot be split as ",
                 nd_str(target), " over ", shape_str(here.shape()), " ranks", at(op));
      sig.in = {target};
      sig.out = {target};
    } else if (type == kAcc || type == kRepeat) {  // a sum over pieces, a piece handed on: any SBP passes
      sig.in = {arriving(i, 0)};
      sig.out = sig.in;
    } else {
      const OpSchema* schema = schema_of(op);
      RILL_CHECK(schema != nullptr, Runtime, "[", op.name(), "] a global job cannot have a '", type, "' op yet",
                 at(op));
      sig = pick(i, *schema);
    }
    for (size_t k = 0; k < sig.out.size(); ++k) sbp_[op.outputs(static_cast<int>(k))] = sig.out[k];
    for (const NdSbp& s : sig.in) op.add_in_sbps(nd_str(s));
    for (const NdSbp& s : sig.out) op.add_out_sbps(nd_str(s));
    chosen_.emplace(i, std::move(sig));
  }

  // The signature of op i on its placement: of the rule's signatures, per mesh dim in order (on the shapes the
  // earlier dims leave), the one whose inputs cost the fewest bytes to box from what arrives.
  NdSig pick(int i, const OpSchema& schema) {
    const OpConf& op = job_.ops(i);
    const Place& here = places_[i];
    std::vector<MetaSym> ins, outs;
    for (const std::string& lbn : op.inputs()) ins.push_back(meta_from_proto(desc_of(lbn)));
    for (const plan::TensorDesc& d : op.output_descs()) outs.push_back(meta_from_proto(d));
    std::vector<NdSbp> arrived;
    for (int k = 0; k < op.inputs_size(); ++k) arrived.push_back(arriving(i, k));
    AttrsSym attrs = attrs_from_proto(schema, op.attrs());
    NdSig sig{std::vector<NdSbp>(ins.size()), std::vector<NdSbp>(outs.size())};
    for (int d = 0; d < here.dims(); ++d) {
      SbpContext ctx{schema, ins, outs, *attrs};
      std::vector<Sig> candidates = ops::sbp_signatures(ctx);
      const Sig* best = nullptr;
      int64_t best_cost = 0;
      for (const Sig& c : candidates) {
        if (!acceptable(schema, c, ins, outs, here.dim_size(d), arrived, d)) continue;
        int64_t cost = 0;
        for (size_t k = 0; k < ins.size(); ++k)
          cost += boxing_cost(arrived[k][static_cast<size_t>(d)], c.in[k],
                              ins[k]->numel * static_cast<int64_t>(dtype_itemsize(ins[k]->dtype)));
        if (best == nullptr || cost < best_cost) {
          best = &c;
          best_cost = cost;
        }
      }
      if (best == nullptr) {
        std::string seen;
        for (const NdSbp& a : arrived) seen += (seen.empty() ? "" : "; ") + nd_str(a);
        RILL_FAIL(Runtime, "[", op.name(), "] no SBP signature of '", op.op_type(), "' fits its inputs (",
                  seen, ")", here.dims() > 1 ? " along mesh dim " + std::to_string(d) : std::string(), at(op));
      }
      for (size_t k = 0; k < ins.size(); ++k) {
        sig.in[k].push_back(best->in[k]);
        ins[k] = split_meta(ins[k], best->in[k], here.dim_size(d));
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        sig.out[k].push_back(best->out[k]);
        outs[k] = split_meta(outs[k], best->out[k], here.dim_size(d));
      }
    }
    return sig;
  }

  // m as a line of n ranks holds it under s.
  static MetaSym split_meta(const MetaSym& m, const Sbp& s, int64_t n) {
    return s.is_split() ? make_contiguous_meta(split_by(m->shape, s, n), m->dtype, m->device) : m;
  }

  // Whether sig, for mesh dim d of n ranks on these shapes, is one the op may take.
  bool acceptable(const OpSchema& schema, const Sig& sig, const std::vector<MetaSym>& ins,
                  const std::vector<MetaSym>& outs, int64_t n, const std::vector<NdSbp>& arrived, int d) {
    if (sig.in.size() != ins.size() || sig.out.size() != outs.size()) return false;
    bool all_broadcast = true;
    for (size_t k = 0; k < ins.size(); ++k) {
      all_broadcast &= sig.in[k].is_broadcast();
      if (!splits_evenly(sig.in[k], ins[k]->shape, n)) return false;
    }
    for (size_t k = 0; k < outs.size(); ++k)
      if (!splits_evenly(sig.out[k], outs[k]->shape, n)) return false;
    // Every rank draws the same numbers: only the whole tensor on every rank gets the masks one process would.
    if (schema.flags.random && !all_broadcast && n > 1) return false;
    // An update writes its variable in place: it keeps the variable's SBP.
    if (schema.flags.updates_in_place)
      for (size_t k = 0; k < outs.size(); ++k) {
        const int in = ops::updated_input(schema, static_cast<int>(k), static_cast<int>(ins.size()));
        if (in >= 0 && arrived[static_cast<size_t>(in)][static_cast<size_t>(d)] != sig.in[static_cast<size_t>(in)])
          return false;
      }
    return true;
  }

  // Every transfer (a value and the placement it goes to) gets a tag, in the job's order: the same on every rank.
  void number_transfers(int original) {
    for (int i = 0; i < original; ++i)
      for (int k = 0; k < job_.ops(i).inputs_size(); ++k)
        if (crosses(i, k))
          tags_.emplace(transfer_key(job_.ops(i).inputs(k), places_[i]), job_.conf().transfer_tags() + tags_.size());
    RILL_CHECK(tags_.size() < kTagsPerJob, Value, "[nn.Graph] a graph has more than ", kTagsPerJob,
               " values crossing placements");
  }

  static std::string transfer_key(const std::string& lbn, const Place& to) {
    return lbn + "->" + shape_str(to.ranks);
  }

  // The chain of collectives the boxing for op i joins: one per part of the iteration (an acc's input is boxed in
  // the piece loop), so that no ctrl edge joins the piece loop to what runs once.
  Part chain_of(int i) const { return graph_.op(i).op_type() == kAcc ? Part::kPiece : parts_[i]; }

  void lower(int i) {
    chain_ = chain_of(i);
    if (!mine(i)) {
      keep_[static_cast<size_t>(i)] = false;
      return;
    }
    const NdSig& sig = chosen_.at(i);
    const Place& here = places_[i];
    OpConf& op = *job_.mutable_ops(i);
    if (is_binding_op(op)) {
      auto& shape = *(*op.mutable_attrs())["shape"].mutable_ints()->mutable_v();
      const Shape local = split_shape(Shape(shape.begin(), shape.end()), sig.out[0], here, sig.out[0].size());
      shape.Assign(local.begin(), local.end());
      return;
    }
    for (int k = 0; k < op.inputs_size(); ++k) {
      const std::string lbn = op.inputs(k);
      const NdSbp& to = sig.in[static_cast<size_t>(k)];
      std::string value = lbn;
      if (crosses(i, k)) value = received(lbn, places_[graph_.input_producer(i, k).op], here, op);
      const NdSbp from = arriving(i, k);
      if (from != to) value = boxed(value, lbn, from, to, here, op);
      if (value != lbn) op.set_inputs(k, value);
    }
    const OpSchema* schema = schema_of(op);
    if (schema == nullptr || schema->local_attrs == nullptr) return;
    // The attrs that hold sizes, made a line's of each mesh dim in turn, on the shapes the dims before it leave.
    std::vector<MetaSym> ins, outs;
    for (const std::string& lbn : op.inputs()) ins.push_back(meta_from_proto(logical_desc(lbn)));
    for (const plan::TensorDesc& d : op.output_descs()) outs.push_back(meta_from_proto(d));
    AttrsSym attrs = attrs_from_proto(*schema, op.attrs());
    bool split = false;
    for (int d = 0; d < here.dims(); ++d) {
      const Sig dim = sig.dim(static_cast<size_t>(d));
      bool here_split = false;
      for (const Sbp& s : dim.in) here_split |= s.is_split();
      for (const Sbp& s : dim.out) here_split |= s.is_split();
      if (!here_split) continue;
      split = true;
      attrs = schema->local_attrs(SbpContext{*schema, ins, outs, *attrs}, dim, here.dim_size(d));
      for (size_t k = 0; k < ins.size(); ++k) ins[k] = split_meta(ins[k], dim.in[k], here.dim_size(d));
      for (size_t k = 0; k < outs.size(); ++k) outs[k] = split_meta(outs[k], dim.out[k], here.dim_size(d));
    }
    if (!split) return;
    op.mutable_attrs()->clear();
    attrs_to_proto(*schema, *attrs, op.mutable_attrs());
  }

  // The logical desc of lbn, which may be a boxed or received blob (made by an op this pass added).
  const plan::TensorDesc& logical_desc(const std::string& lbn) {
    auto it = logical_of_.find(lbn);
    return it == logical_of_.end() ? desc_of(lbn) : desc_of(it->second);
  }

  // value (the blob lbn, of SBP from) as to inside `here`, for consumer: the boxing ops' last output, made once
  // (Note [Boxing], on a mesh).
  std::string boxed(const std::string& value, const std::string& lbn, const NdSbp& from, const NdSbp& to,
                    const Place& here, const OpConf& consumer) {
    RILL_ASSERT(static_cast<int>(from.size()) == here.dims() && static_cast<int>(to.size()) == here.dims(), "[",
                consumer.name(), "] boxes '", lbn, "' from ", nd_str(from), " to ", nd_str(to), " on a mesh of ",
                here.dims(), " dims");
    auto [it, fresh] = boxed_.emplace(value + "#" + nd_str(to), std::string());
    if (!fresh) return it->second;
    const plan::TensorDesc& logical = desc_of(lbn);
    const Shape shape = meta_from_proto(logical)->shape;
    const size_t dims = from.size();
    size_t first = 0;
    while (first < dims && from[first] == to[first]) ++first;
    NdSbp now = from;
    std::string out = value;
    auto change = [&](size_t d, const Sbp& target) {
      out = boxed_in_line(out, now[d], target, split_shape(shape, now, here, d), logical.dtype(),
                          here.line(static_cast<int>(d), rank_), consumer);
      now[d] = target;
    };
    for (size_t d = dims; d-- > first + 1;)
      if (!now[d].is_broadcast()) change(d, Sbp::broadcast());
    if (first < dims) change(first, to[first]);
    for (size_t d = first + 1; d < dims; ++d)
      if (!to[d].is_broadcast()) change(d, to[d]);
    logical_of_[out] = lbn;
    return it->second = out;
  }

  // value, of SBP from along `line` (of which each rank holds a part of a tensor of shape whole), as to.
  std::string boxed_in_line(const std::string& value, const Sbp& from, const Sbp& to, const Shape& whole,
                            const std::string& dtype, const Place& line, const OpConf& consumer) {
    const int64_t n = line.size(), position = line.position(rank_);
    if (n == 1 || from == to) return value;  // on one rank every SBP is the whole tensor
    if (from.is_partial()) {
      return to.is_split() ? collective("_boxing_reduce_scatter", value, to.axis, n, line.group, consumer)
                           : collective("_boxing_all_reduce", value, -1, n, line.group, consumer);
    }
    std::string out = value;
    if (from.is_split()) out = collective("_boxing_all_gather", out, from.axis, n, line.group, consumer);
    if (to.is_split()) {
      out = slice(out, to.axis, whole[static_cast<size_t>(to.axis)] / n, position, dtype, consumer);
    } else if (to.is_partial()) {
      OpConf* p = added("_boxing_partial", out, consumer);
      (*p->mutable_attrs())["keep"].set_b(position == 0);
      out = p->outputs(0);
    }
    return out;
  }

  // lbn, made on placement `from`, received on this rank of `to` (broadcast): a _boxing_recv, made once.
  std::string received(const std::string& lbn, const Place& from, const Place& to, const OpConf& consumer) {
    const std::string key = transfer_key(lbn, to);
    auto [it, fresh] = boxed_.emplace(key, std::string());
    if (!fresh) return it->second;
    const plan::TensorDesc& logical = desc_of(lbn);
    const int64_t src = from.ranks[static_cast<size_t>(to.position(rank_) % from.size())];
    OpConf* op = add_op(job_, names_.fresh(lbn.substr(0, lbn.find('/')) + "-recv"), "_boxing_recv",
                        consumer.scope(), 1);
    added_at_.push_back(anchor_);
    op->set_loc(consumer.loc());
    auto& attrs = *op->mutable_attrs();
    attrs["src"].set_i(src);
    attrs["tag"].set_i(tags_.at(key));
    auto* shape = attrs["shape"].mutable_ints();  // set even when empty: a 0-d value
    for (int64_t d : logical.shape()) shape->add_v(d);
    attrs["dtype"].set_dtype(logical.dtype());
    logical_of_[op->outputs(0)] = lbn;
    return it->second = op->outputs(0);
  }

  // Op p's outputs that ops of other placements read, made on this rank's: boxed to B here and sent to the ranks
  // of those placements this rank serves, right after p (Note [Where the boxing goes in the order]).
  void send_to_other_placements(int p_op) {
    std::vector<int> readers(graph_.data_consumers(p_op).begin(), graph_.data_consumers(p_op).end());
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (int i : readers)
      if (i < static_cast<int>(places_.size())) send_what_needs(i, p_op);
  }

  // Op i's inputs made by op p_op on this rank's placement, sent to op i's.
  void send_what_needs(int i, int p_op) {
    chain_ = chain_of(i);
    const Place& to = places_[i];
    for (int k = 0; k < graph_.op(i).inputs_size(); ++k) {
      if (!crosses(i, k) || graph_.input_producer(i, k).op != p_op) continue;
      const BlobRef p = graph_.input_producer(i, k);
      const Place& from = places_[p.op];
      const int64_t position = from.position(rank_);
      if (position < 0) continue;
      const std::string lbn = job_.ops(p.op).outputs(p.out);
      if (!sent_.emplace(transfer_key(lbn, to)).second) continue;
      std::string value = lbn;
      const NdSbp own = sbp_[lbn], whole = all_broadcast(from.dims());
      const OpConf& producer = job_.ops(p.op);
      if (own != whole) value = boxed(value, lbn, own, whole, from, producer);
      for (int64_t d = 0; d < to.size(); ++d) {
        if (d % from.size() != position) continue;
        OpConf* send = added("_boxing_send", value, producer);
        auto& attrs = *send->mutable_attrs();
        attrs["dst"].set_i(to.ranks[static_cast<size_t>(d)]);
        attrs["tag"].set_i(tags_.at(transfer_key(lbn, to)));
      }
    }
  }

  OpConf* added(std::string_view type, const std::string& in, const OpConf& consumer) {
    const std::string base = in.substr(0, in.find('/')) + "-" + std::string(type.substr(1));
    OpConf* op = add_op(job_, names_.fresh(base), type, consumer.scope(), 1);
    added_at_.push_back(anchor_);
    op->set_loc(consumer.loc());
    op->add_inputs(in);
    return op;
  }

  std::string collective(std::string_view type, const std::string& in, int32_t dim, int64_t n, int64_t group,
                         const OpConf& consumer) {
    OpConf* op = added(type, in, consumer);
    auto& attrs = *op->mutable_attrs();
    if (dim >= 0) {
      attrs["dim"].set_i(dim);
      attrs["world"].set_i(n);
    }
    attrs["group"].set_i(group);
    std::string& last = last_collective_[chain_];
    if (!last.empty()) op->add_ctrl_inputs(last);
    last = op->name();
    return op->outputs(0);
  }

  // This rank's part along dim: a view, made dense by a cast to its own dtype unless dim is 0 (the consumers, as
  // traced, read what eager gave them, which may be dense only).
  std::string slice(const std::string& in, int32_t dim, int64_t length, int64_t position, const std::string& dtype,
                    const OpConf& consumer) {
    OpConf* op = added("_slice", in, consumer);
    op->set_op_type("slice");
    auto& attrs = *op->mutable_attrs();
    attrs["dim"].set_i(dim);
    attrs["start"].set_i(position * length);
    attrs["end"].set_i((position + 1) * length);
    attrs["step"].set_i(1);
    if (dim == 0) return op->outputs(0);
    OpConf* dense = added("_dense", op->outputs(0), consumer);
    dense->set_op_type("cast");
    (*dense->mutable_attrs())["dtype"].set_dtype(dtype);
    return dense->outputs(0);
  }

  // Note [Where the boxing goes in the order]
  // The ops this pass adds go where they are made, not at the end of the job: the boxing of op i's inputs right
  // before op i; what op p makes for other placements (boxed to B, sent) right after op p. Each stream's tasks
  // run in the job's order (Note [The memory plan] in memory_plan.cpp), and a collective must not wait there for
  // what its peers can only make after it: at the end of the job, a rank that takes part in a collective only so
  // that others can send its result (nothing of its own reads it) would call it after its own backward, which
  // waits for what those others send; right before the op that reads the value sent, the same rank would call it
  // after receiving that value, which its peers send only after the collective.
  void place_added_ops(int original) {
    std::vector<std::pair<int, int>> at(static_cast<size_t>(job_.ops_size()));  // (op, 0 before / 1 it / 2 after)
    for (int i = 0; i < original; ++i) at[static_cast<size_t>(i)] = {i, 1};
    for (int i = original; i < job_.ops_size(); ++i) at[static_cast<size_t>(i)] = added_at_[static_cast<size_t>(i - original)];
    std::vector<int> order(static_cast<size_t>(job_.ops_size()));
    for (int i = 0; i < job_.ops_size(); ++i) order[static_cast<size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return at[a] < at[b]; });
    std::vector<OpConf*> ops;  // by pointer (Note [Reordering ops by pointer] in op_graph.cpp)
    std::vector<bool> keep;
    for (int i : order) {
      ops.push_back(job_.mutable_ops(i));
      keep.push_back(keep_[static_cast<size_t>(i)]);
    }
    std::copy(ops.begin(), ops.end(), job_.mutable_ops()->pointer_begin());
    keep_ = std::move(keep);
  }

  // What this rank keeps: what its outputs, assigns and sends need, its variables and inputs, and its collectives:
  // a rank of a placement wider than the one a value goes to may send nothing, but the ranks that do send wait
  // for it in the collective that boxes the value to broadcast.
  void remove_unneeded() {
    const OpGraph g(job_);
    std::vector<int> roots;
    for (int i = 0; i < g.size(); ++i) {
      const std::string& t = g.op(i).op_type();
      const OpSchema* schema = schema_of(g.op(i));
      if (t == kOutput || t == kAssign || t == "_boxing_send" || is_binding_op(g.op(i)) ||
          (schema != nullptr && schema->flags.collective))
        roots.push_back(i);
    }
    std::vector<bool> live = g.ancestors(roots);
    for (int i : roots) live[static_cast<size_t>(i)] = true;
    remove_ops(job_, live);
  }

  // The variables, inputs and outputs left numbered 0.. in their traced order; the traced indices kept.
  void bind_in_order() {
    auto& conf = *job_.mutable_conf();
    std::map<int64_t, OpConf*> variables, inputs, outputs;
    for (OpConf& op : *job_.mutable_ops()) {
      if (op.op_type() == kVariable) variables[int_attr(op, "index")] = &op;
      if (op.op_type() == kInput) inputs[int_attr(op, "index")] = &op;
      if (op.op_type() == kOutput) outputs[int_attr(op, "index")] = &op;
    }
    auto renumber = [](std::map<int64_t, OpConf*>& ops, google::protobuf::RepeatedField<int32_t>* traced) {
      int64_t next = 0;
      for (auto& [index, op] : ops) {
        traced->Add(static_cast<int32_t>(index));
        (*op->mutable_attrs())["index"].set_i(next++);
      }
    };
    renumber(variables, conf.mutable_bound_variables());
    renumber(inputs, conf.mutable_bound_inputs());
    renumber(outputs, conf.mutable_bound_outputs());
    int32_t stage = -1;  // this rank's first stage: a pipeline stage s of p keeps p - s pieces in flight
    for (const OpConf& op : job_.ops())
      if (op.stage() > 0 && (stage < 0 || op.stage() - 1 < stage)) stage = op.stage() - 1;
    if (stage >= 0) conf.set_piece_buffers(conf.stages_size() - stage);
  }

  void check_local_descs() {
    for (const OpConf& op : job_.ops()) {
      const std::vector<int64_t> mesh = place_of(op.placement()).shape();
      for (int k = 0; k < op.out_sbps_size(); ++k) {
        auto it = logical_shapes_.find(op.outputs(k));
        if (it == logical_shapes_.end()) continue;
        const Shape want = local_shape(it->second, parse_nd(op.out_sbps(k)), mesh);
        const Shape got = meta_from_proto(op.output_descs(k))->shape;
        RILL_CHECK(got == want, Runtime, "[graph] the SBP rule of '", op.op_type(), "' is wrong: ", op.name(),
                   " output ", k, " as ", op.out_sbps(k), " should have shape ", shape_str(want),
                   " on each rank, but has ", shape_str(got), at(op));
      }
    }
  }

  Job& job_;
  OpGraph graph_;  // of the traced job (the ops the pass adds are not in it)
  NameSet names_;
  int64_t rank_;
  std::vector<Place> places_;                           // by traced op index
  std::vector<bool> keep_;                              // by op index: false for another rank's op
  std::unordered_map<std::string, NdSbp> sbp_;          // the SBP of each blob of the job as traced
  std::map<int, NdSig> chosen_;                         // by op index
  std::unordered_map<std::string, std::string> boxed_;  // "blob#sbp" (or a transfer) -> its boxed blob
  std::unordered_map<std::string, std::string> logical_of_;  // boxed blob -> the traced blob it stands for
  std::unordered_map<std::string, Shape> logical_shapes_;    // every traced blob's logical shape
  std::unordered_map<std::string, int64_t> tags_;            // transfer -> its tag
  std::unordered_set<std::string> sent_;                     // transfers this rank sends
  std::vector<Part> parts_;                                  // by traced op index
  Part chain_ = Part::kPiece;                                // the chain the boxing being made joins
  std::map<Part, std::string> last_collective_;              // per chain: its last collective
  std::pair<int, int> anchor_;                               // where the ops made now go (place_added_ops)
  std::vector<std::pair<int, int>> added_at_;                // per added op, in the order made
};

}  // namespace

void place_ops(Job& job) {
  if (!job.conf().global()) return;
  const OpGraph g(job);
  const std::vector<Place> places = placements(job, g);
  for (int i = 0; i < g.size(); ++i) write_place(*job.mutable_ops(i)->mutable_placement(), places[i]);
}

void sbp_signatures(Job& job) {
  if (!job.conf().global()) return;
  Lowering(job).choose_signatures();
}

void sbp_lowering(Job& job) {
  if (!job.conf().global()) return;
  Lowering(job).lower_for_rank();
}

}  // namespace rill::graph
