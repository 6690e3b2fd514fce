#include "rill/graph/op_graph.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <functional>
#include <queue>

#include "rill/eager/functional.h"
#include "rill/util/error.h"

namespace rill::graph {

// Note [Pieces and the once part]
// With gradient_accumulation_steps N > 1 an iteration runs the forward and
// backward N times, once per micro-batch ("piece"), and the optimizer once. Each
// op is in one part:
//   binding: variables (no task; every piece and the once part read them);
//   piece:   input ops, repeat ops, the source tick, and what reads a piece;
//   once:    acc ops, and what reads a once value; an op reading nothing
//            produced per piece or once is once by its role (once_by_role:
//            optimizer ops, outputs, assigns into trainable variables; under
//            SSP the outputs only) and per piece otherwise.
// An op reading both parts is "mixed": gradient_accumulation inserts acc ops on
// the piece -> once edges and repeat ops on the once -> piece edges so that none
// is left, and the compiler refuses one. With one piece, every task is in the
// piece part (the piece loop runs once).

bool is_graph_only(std::string_view t) {
  return t == kVariable || t == kInput || t == kOutput || t == kAssign || t == kTick || t == kRepeat ||
         t == kAcc;
}

bool is_binding_op(const OpConf& op) { return op.op_type() == kVariable || op.op_type() == kInput; }

const OpSchema* schema_of(const OpConf& op) {
  if (is_graph_only(op.op_type())) return nullptr;
  RILL_CHECK(ops::find(op.op_type()) != nullptr, Runtime, "[", op.name(), "] unknown op type '", op.op_type(),
             "'", at(op));
  return &eager::op(op.op_type());
}

std::string deterministic_bytes(const google::protobuf::MessageLite& m) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    m.SerializePartialToCodedStream(&out);
  }  // the stream flushes into bytes as it goes out of scope
  return bytes;
}

std::string at(const OpConf& op) { return op.loc().empty() ? std::string() : " (at " + op.loc() + ")"; }

int64_t int_attr(const OpConf& op, const std::string& name) {
  auto it = op.attrs().find(name);
  RILL_CHECK(it != op.attrs().end() && it->second.value_case() == plan::AttrValue::kI, Runtime, "[", op.name(),
             "] the ", op.op_type(), " op needs an int attr '", name, "'", at(op));
  return it->second.i();
}

int64_t int_attr_or(const OpConf& op, const std::string& name, int64_t fallback) {
  return op.attrs().count(name) ? int_attr(op, name) : fallback;
}

std::string str_attr(const OpConf& op, const std::string& name) {
  auto it = op.attrs().find(name);
  if (it != op.attrs().end() && it->second.value_case() == plan::AttrValue::kS) return it->second.s();
  if (it != op.attrs().end() && it->second.value_case() == plan::AttrValue::kDtype) return it->second.dtype();
  RILL_FAIL(Runtime, "[", op.name(), "] the ", op.op_type(), " op needs a str attr '", name, "'", at(op));
}

int32_t job_pieces(const Job& job) { return std::max(1, job.conf().gradient_accumulation_steps()); }

namespace {

// Note [Probing ahead]
// At ten thousand ops an index outgrows the core's cache, and so do the job's strings: a lookup's slot is a
// miss, and so is the key it compares (another op's output, anywhere in the job), one after the other. A
// graph's build looks up every key of the job, known in advance: so it hashes them all first (a walk in job
// order), then probes key j while key j + kAhead's slot and key j + kAhead / 2's compared key are already on
// their way. The misses overlap instead of adding up; a small job, all in cache, is unchanged.
constexpr size_t kAhead = 16;

struct Key {
  std::string_view key;
  size_t hash;
};

// Run probe(j) for each of keys, prefetching through index kAhead keys ahead.
template <typename Index, typename Probe>
void probe_ahead(const Index& index, const std::vector<Key>& keys, Probe&& probe) {
  for (size_t j = 0; j < keys.size(); ++j) {
    if (j + kAhead < keys.size()) index.prefetch_slot(keys[j + kAhead].hash);
    if (j + kAhead / 2 < keys.size()) index.prefetch_key(keys[j + kAhead / 2].hash);
    probe(j);
  }
}

}  // namespace

OpGraph::OpGraph(const Job& job) : job_(&job) {
  const int n = job.ops_size();
  // Every key, hashed in one walk over the ops in job order: names, outputs, inputs, ctrl inputs (Note [Probing
  // ahead]).
  std::vector<Key> names, outputs, inputs, ctrls;
  std::vector<int> ctrl_op;  // the op of each ctrl input
  names.reserve(static_cast<size_t>(n));
  outputs.reserve(static_cast<size_t>(n));
  inputs.reserve(2 * static_cast<size_t>(n));
  first_output_.assign(static_cast<size_t>(n) + 1, 0);
  first_input_.assign(static_cast<size_t>(n) + 1, 0);
  const auto& ops = job.ops();
  for (int i = 0; i < n; ++i) {
    const OpConf& op = ops.Get(i);
    names.push_back({op.name(), key_hash(op.name())});
    for (const std::string& lbn : op.outputs()) outputs.push_back({lbn, key_hash(lbn)});
    for (const std::string& lbn : op.inputs()) inputs.push_back({lbn, key_hash(lbn)});
    for (const std::string& c : op.ctrl_inputs()) {
      ctrls.push_back({c, key_hash(c)});
      ctrl_op.push_back(i);
    }
    first_output_[i + 1] = static_cast<int>(outputs.size());
    first_input_[i + 1] = static_cast<int>(inputs.size());
  }
  by_name_.reserve(names.size());
  for (int i = 0; i < n; ++i)
    RILL_CHECK(by_name_.insert(names[i].key, names[i].hash, i), Runtime, "[", names[i].key,
               "] two ops of the job have this name", at(job.ops(i)));
  by_lbn_.reserve(outputs.size());
  for (int i = 0; i < n; ++i)
    for (int j = first_output_[i]; j < first_output_[i + 1]; ++j)
      RILL_CHECK(by_lbn_.insert(outputs[j].key, outputs[j].hash, BlobRef{i, j - first_output_[i]}), Runtime, "[",
                 names[i].key, "] output '", outputs[j].key, "' is already the output of another op", at(job.ops(i)));
  input_producers_.resize(inputs.size());
  probe_ahead(by_lbn_, inputs, [&](size_t j) {
    const BlobRef* p = by_lbn_.find(inputs[j].key, inputs[j].hash);
    if (p != nullptr) input_producers_[j] = *p;
  });
  std::vector<int> ctrl_producers(ctrls.size());
  probe_ahead(by_name_, ctrls, [&](size_t j) {
    const int* p = by_name_.find(ctrls[j].key, ctrls[j].hash);
    ctrl_producers[j] = p == nullptr ? -1 : *p;
  });
  // (producer, consumer) pairs in consumer order, each once: an op reading a blob twice, or two outputs of one
  // op, is one edge. last_*[p] == i once the pair (p, i) is listed: a sink tick has thousands, so no search.
  std::vector<std::pair<int, int>> data, ctrl, preds;
  data.reserve(inputs.size());
  preds.reserve(inputs.size() + ctrls.size());
  std::vector<int> last_data(n, -1), last_ctrl(n, -1), last_pred(n, -1);
  auto add = [](std::vector<std::pair<int, int>>& pairs, std::vector<int>& last, int p, int i,
                std::pair<int, int> pair) {
    if (last[p] == i) return;
    last[p] = i;
    pairs.push_back(pair);
  };
  size_t c = 0;  // the next ctrl input
  for (int i = 0; i < n; ++i) {
    for (int j = first_input_[i]; j < first_input_[i + 1]; ++j) {
      const int p = input_producers_[j].op;
      if (p < 0) continue;
      add(data, last_data, p, i, {p, i});
      add(preds, last_pred, p, i, {i, p});
    }
    for (; c < ctrls.size() && ctrl_op[c] == i; ++c) {
      const int p = ctrl_producers[c];
      if (p < 0) continue;
      add(ctrl, last_ctrl, p, i, {p, i});
      add(preds, last_pred, p, i, {i, p});
    }
  }
  data_consumers_ = rows_of(n, data);
  ctrl_consumers_ = rows_of(n, ctrl);
  predecessors_ = rows_of(n, preds);
}

void OpGraph::add_ctrl_edges(const std::vector<std::pair<int, int>>& edges) {
  const int n = size();
  std::vector<std::vector<int>> added(n);  // by consumer, in the order the pass appended them
  for (const auto& [consumer, producer] : edges) added[consumer].push_back(producer);
  // As the constructor lists them: an op's predecessors once each, the old ones first; a producer's ctrl
  // consumers once each, in job order.
  std::vector<std::pair<int, int>> ctrl, preds;
  std::vector<int> last_pred(n, -1);
  for (int i = 0; i < n; ++i) {
    for (int p : predecessors(i)) last_pred[p] = i, preds.emplace_back(i, p);
    for (int p : added[i]) {
      ctrl.emplace_back(p, i);
      if (last_pred[p] != i) last_pred[p] = i, preds.emplace_back(i, p);
    }
  }
  for (int p = 0; p < n; ++p)
    for (int c : ctrl_consumers(p)) ctrl.emplace_back(p, c);
  std::sort(ctrl.begin(), ctrl.end());
  ctrl.erase(std::unique(ctrl.begin(), ctrl.end()), ctrl.end());
  ctrl_consumers_ = rows_of(n, ctrl);
  predecessors_ = rows_of(n, preds);
}

OpGraph::Rows OpGraph::rows_of(int n, const std::vector<std::pair<int, int>>& pairs) {
  Rows r;
  r.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (const auto& [row, op] : pairs) ++r.offsets[row + 1];
  for (int i = 0; i < n; ++i) r.offsets[i + 1] += r.offsets[i];
  r.edges.resize(pairs.size());
  std::vector<int> next(r.offsets.begin(), r.offsets.end() - 1);
  for (const auto& [row, op] : pairs) r.edges[next[row]++] = op;  // a stable counting sort by row
  return r;
}

int OpGraph::find(const std::string& name) const {
  const int* i = by_name_.find(name);
  return i == nullptr ? -1 : *i;
}

BlobRef OpGraph::producer(const std::string& lbn) const {
  const BlobRef* p = by_lbn_.find(lbn);
  return p == nullptr ? BlobRef{} : *p;
}

std::vector<bool> OpGraph::ancestors(const std::vector<int>& roots) const {
  std::vector<bool> seen(size(), false);
  std::vector<int> stack = roots;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (int p : predecessors(u))
      if (!seen[p]) {
        seen[p] = true;
        stack.push_back(p);
      }
  }
  return seen;
}

bool OpGraph::trainable_variable(int i) const {
  const OpConf& v = op(i);
  if (v.op_type() != kVariable) return false;
  auto it = v.attrs().find("trainable");
  return it != v.attrs().end() && it->second.value_case() == plan::AttrValue::kB && it->second.b();
}

int OpGraph::assign_target(int i) const {
  const OpConf& a = op(i);
  if (a.op_type() != kAssign || a.inputs_size() == 0) return -1;
  BlobRef p = input_producer(i, 0);
  return p.op >= 0 && op(p.op).op_type() == kVariable ? p.op : -1;
}

bool once_by_role(const OpGraph& g, int i) {
  const OpConf& op = g.op(i);
  if (op.op_type() == kOutput) return true;
  if (g.job().conf().ssp()) return false;  // each piece is a step of its own (Note [SSP] in passes/ssp.cpp)
  if (op.scope() == kOptimizerScope) return true;
  int target = g.assign_target(i);
  return target >= 0 && g.trainable_variable(target);
}

std::vector<Part> op_parts(const OpGraph& g) { return op_parts(g, {}); }

std::vector<Part> op_parts(const OpGraph& g, const std::vector<std::pair<int, int>>& added) {
  const Job& job = g.job();
  const int n = job.ops_size();
  const bool one_piece = job_pieces(job) == 1;
  std::vector<std::vector<int>> added_to(added.empty() ? 0 : n);  // the added edges' producers, by consumer
  for (const auto& [consumer, producer] : added) added_to[consumer].push_back(producer);
  std::vector<Part> parts(n, Part::kPiece);
  for (int i = 0; i < n; ++i) {
    const OpConf& op = job.ops(i);
    const std::string& t = op.op_type();
    if (t == kVariable) {
      parts[i] = Part::kBinding;
    } else if (one_piece || t == kInput || t == kRepeat || (t == kTick && str_attr(op, "kind") == "source")) {
      parts[i] = Part::kPiece;
    } else if (t == kAcc) {
      parts[i] = Part::kOnce;
    } else {
      bool piece = false, once = false;
      auto from = [&](int p) {
        if (p >= i) return;  // not in topological order: the compiler reports it
        piece |= parts[p] == Part::kPiece || parts[p] == Part::kMixed;
        once |= parts[p] == Part::kOnce || parts[p] == Part::kMixed;
      };
      if (i < g.size())
        for (int p : g.predecessors(i)) from(p);
      if (!added_to.empty())
        for (int p : added_to[i]) from(p);
      if (piece && once) parts[i] = Part::kMixed;
      else if (piece) parts[i] = Part::kPiece;
      else if (once) parts[i] = Part::kOnce;
      else parts[i] = once_by_role(g, i) ? Part::kOnce : Part::kPiece;
    }
  }
  return parts;
}

std::string NameSet::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 2; graph_->find(name) >= 0 || made_.count(name); ++k) name = base + "-" + std::to_string(k);
  made_.insert(name);
  return name;
}

OpConf* add_op(Job& job, const std::string& name, std::string_view op_type, const std::string& scope,
               int outputs) {
  OpConf* op = job.add_ops();
  op->set_name(name);
  op->set_op_type(std::string(op_type));
  op->set_scope(scope);
  for (int k = 0; k < outputs; ++k) op->add_outputs(name + "/out" + std::to_string(k));
  return op;
}

void sort_topologically(Job& job) { sort_topologically(job, OpGraph(job), {}); }

void sort_topologically(Job& job, const OpGraph& g, const std::vector<std::pair<int, int>>& added) {
  std::vector<int> order;
  {
    const int n = job.ops_size();
    std::vector<int> waiting(n, 0);
    std::vector<std::vector<int>> successors(n);
    auto edge = [&](int consumer, int producer) {
      ++waiting[consumer];
      successors[producer].push_back(consumer);
    };
    for (int i = 0; i < g.size(); ++i)
      for (int p : g.predecessors(i)) edge(i, p);
    for (const auto& [consumer, producer] : added) edge(consumer, producer);
    // Smallest index first: the job's order is kept wherever it already is topological.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; ++i)
      if (waiting[i] == 0) ready.push(i);
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int s : successors[i])
        if (--waiting[s] == 0) ready.push(s);
    }
    if (static_cast<int>(order.size()) < n) {
      // Walk back from a stuck op through stuck predecessors until one repeats: that one is on a cycle.
      std::vector<std::vector<int>> predecessors(n);
      for (int p = 0; p < n; ++p)
        for (int c : successors[p]) predecessors[c].push_back(p);
      int u = 0;
      while (waiting[u] == 0) ++u;
      std::vector<bool> seen(n, false);
      while (!seen[u]) {
        seen[u] = true;
        for (int p : predecessors[u])
          if (waiting[p] > 0) {
            u = p;
            break;
          }
      }
      RILL_FAIL(Runtime, "[", job.ops(u).name(), "] is on a cycle of data and control edges: it waits for itself",
                at(job.ops(u)));
    }
  }
  // Note [Reordering ops by pointer]
  // A repeated message field holds its messages by pointer: reordering or dropping ops moves pointers, where
  // moving messages into a new field would allocate and fill ten thousand fresh ones.
  std::vector<OpConf*> sorted;
  sorted.reserve(order.size());
  for (int i : order) sorted.push_back(job.mutable_ops(i));
  std::copy(sorted.begin(), sorted.end(), job.mutable_ops()->pointer_begin());
}

bool is_row_major(const plan::TensorDesc& d) {
  if (d.strides_size() != d.shape_size()) return false;
  int64_t expected = 1;
  for (int k = d.shape_size() - 1; k >= 0; --k) {
    if (d.shape(k) != 1 && d.strides(k) != expected) return false;
    expected *= d.shape(k);
  }
  return true;
}

void add_ctrl(OpConf& op, const std::string& name) {
  for (const std::string& c : op.ctrl_inputs())
    if (c == name) return;
  op.add_ctrl_inputs(name);
}

bool is_view(const OpConf& op) {
  if (is_graph_only(op.op_type())) return false;
  const OpSchema* s = ops::find(op.op_type());
  return s != nullptr && s->flags.view;
}

std::vector<int> memory_readers(const OpGraph& g, int v, int skip) {
  const std::span<const int> direct = g.data_consumers(v);
  std::vector<int> readers, frontier(direct.begin(), direct.end());
  // Searched, not a flag per op of the job: this runs once per assign (thousands in a 48-block job, each of
  // whose variables has a few readers), and a flag array would make that quadratic in the job's size.
  auto seen = [&](int r) { return std::find(readers.begin(), readers.end(), r) != readers.end(); };
  while (!frontier.empty()) {
    int r = frontier.back();
    frontier.pop_back();
    if (r == skip || g.assign_target(r) == v || seen(r)) continue;
    readers.push_back(r);
    if (is_view(g.op(r)))
      for (int c : g.data_consumers(r)) frontier.push_back(c);
  }
  return readers;
}

void redirect(OpConf& op, const std::unordered_map<std::string, std::string>& lbn_to,
              const std::unordered_map<std::string, std::string>& name_to) {
  if (lbn_to.empty() && name_to.empty()) return;  // CSE before its first merge
  for (std::string& lbn : *op.mutable_inputs())
    if (auto it = lbn_to.find(lbn); it != lbn_to.end()) lbn = it->second;
  if (op.ctrl_inputs_size() == 0) return;
  std::vector<std::string> ctrl;
  for (const std::string& c : op.ctrl_inputs()) {
    auto it = name_to.find(c);
    const std::string& name = it == name_to.end() ? c : it->second;
    if (std::find(ctrl.begin(), ctrl.end(), name) == ctrl.end()) ctrl.push_back(name);
  }
  op.clear_ctrl_inputs();
  for (std::string& c : ctrl) op.add_ctrl_inputs(std::move(c));
}

void remove_ops(Job& job, const std::vector<bool>& keep) {
  // By pointer (Note [Reordering ops by pointer]): the kept ops move to the front in their order, then the tail
  // of removed ones is deleted.
  auto& ops = *job.mutable_ops();
  const int n = ops.size();
  int kept = 0;
  for (int i = 0; i < n; ++i)
    if (keep[i]) ops.SwapElements(i, kept++);
  ops.DeleteSubrange(kept, n - kept);
}

std::vector<int64_t> placement_ranks(const Placement& p) {
  if (p.count() == 0) return {p.ranks().begin(), p.ranks().end()};
  std::vector<int64_t> ranks(static_cast<size_t>(p.count()));
  for (int64_t k = 0; k < p.count(); ++k) ranks[static_cast<size_t>(k)] = p.first() + k;
  return ranks;
}

int64_t placement_size(const Placement& p) { return p.count() > 0 ? p.count() : p.ranks_size(); }

void set_placement_ranks(Placement& p, const std::vector<int64_t>& ranks) {
  p.clear_ranks();
  p.clear_first();
  p.clear_count();
  const bool range = !ranks.empty() && ranks.back() - ranks.front() + 1 == static_cast<int64_t>(ranks.size());
  if (range) {
    p.set_first(ranks.front());
    p.set_count(static_cast<int64_t>(ranks.size()));
  } else {
    for (int64_t r : ranks) p.add_ranks(r);
  }
}

void set_placement(Placement& p, const std::vector<int64_t>& ranks, int64_t group, const std::vector<int64_t>& mesh,
                   const std::vector<int64_t>& dim_groups) {
  set_placement_ranks(p, ranks);
  p.set_group(group);
  p.mutable_mesh()->Assign(mesh.begin(), mesh.end());
  p.mutable_dim_groups()->Assign(dim_groups.begin(), dim_groups.end());
}

}  // namespace rill::graph
