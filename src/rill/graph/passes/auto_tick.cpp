// auto_tick: the ticks that bound an iteration and the write-after-read edges of the assigns.
//   - A source tick starts each piece: every op with no produced input (it reads only variables and inputs, or
//     nothing) waits for it; in the once part (Note [Pieces and the once part] in op_graph.cpp) it waits for an
//     acc of the source tick, which fires once all pieces have started.
//   - An assign waits for every other reader of its variable that is not already before it (an ancestor has
//     read by the time the assign acts), through an acc'd join tick when it runs once and the readers per piece.
//   - A sink tick waits for every op nothing else waits for, the per-piece ones through an acc'd join tick.
//   - A variable written per piece is read by the next piece only after that write (Note [Orders carried from
//     piece to piece]).
#include <cstdint>
#include <string>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/util/error.h"

namespace rill::graph {
namespace {

// The ticks auto_tick adds to a job, and their ctrl edges by index (consumer, producer), so that one graph of
// the job as traced serves the whole pass: the sink and the final order read the edges, not a new graph.
struct Ticks {
  Job& job;
  NameSet names;
  std::vector<std::pair<int, int>> added;  // ctrl edges added since the graph was built
  const int first;                         // the first added op

  Ticks(Job& j, const OpGraph& g) : job(j), names(g), first(j.ops_size()) {}

  int add(const std::string& base, std::string_view type, const std::string& kind) {
    OpConf* op = add_op(job, names.fresh(base), type, "", 0);
    if (!kind.empty()) (*op->mutable_attrs())["kind"].set_s(kind);
    return job.ops_size() - 1;
  }
  int add_tick(const std::string& base, const std::string& kind) { return add(base, kTick, kind); }
  // An acc over the pieces of ctrl op `of`: it acts once all pieces of `of` acted.
  int add_ctrl_acc(int of, int64_t pieces) {
    const int acc = add(job.ops(of).name() + "-acc", kAcc, "");
    (*job.mutable_ops(acc)->mutable_attrs())["repeat"].set_i(pieces);
    wait(acc, of);
    return acc;
  }
  // consumer waits for producer (a ctrl input; each once: a sink waits for thousands, so an added tick's list
  // is not searched, each of its producers being new to it).
  void wait(int consumer, int producer) {
    OpConf& op = *job.mutable_ops(consumer);
    if (consumer < first) add_ctrl(op, job.ops(producer).name());
    else op.add_ctrl_inputs(job.ops(producer).name());
    added.emplace_back(consumer, producer);
  }
};

// Whether op i waits for some task already (a produced data input or a ctrl input).
bool waits_for_a_task(const OpGraph& g, int i) {
  for (int p : g.predecessors(i))
    if (!is_binding_op(g.op(p))) return true;
  return false;
}

// The ops, consumers before their producers (every op after all that read it or wait for it).
std::vector<int> consumers_first(const OpGraph& g) {
  const int n = g.size();
  std::vector<int> consumers(n, 0), order, ready;
  for (int i = 0; i < n; ++i)
    for (int p : g.predecessors(i)) ++consumers[p];
  for (int i = 0; i < n; ++i)
    if (consumers[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    const int u = ready.back();
    ready.pop_back();
    order.push_back(u);
    for (int p : g.predecessors(u))
      if (--consumers[p] == 0) ready.push_back(p);
  }
  return order;
}

// Which of assigns[first, first + 64 * words) each op is an ancestor of: a bitset per op, filled by one sweep
// over order (consumers_first: an op reaches what its consumers reach, and them). One sweep for a block of
// assigns, not an ancestor walk per assign: a 48-block model has thousands of assigns over ten thousand ops.
std::vector<uint64_t> assigns_reached(const OpGraph& g, const std::vector<int>& order, const std::vector<int>& assigns,
                                      size_t first, size_t words) {
  std::vector<int> bit(g.size(), -1);
  for (size_t k = first; k < assigns.size() && k < first + 64 * words; ++k)
    bit[assigns[k]] = static_cast<int>(k - first);
  std::vector<uint64_t> reached(static_cast<size_t>(g.size()) * words, 0);
  for (int u : order) {
    const uint64_t* mine = &reached[static_cast<size_t>(u) * words];
    for (int p : g.predecessors(u)) {
      uint64_t* theirs = &reached[static_cast<size_t>(p) * words];
      for (size_t w = 0; w < words; ++w) theirs[w] |= mine[w];
      if (bit[u] >= 0) theirs[bit[u] / 64] |= uint64_t{1} << (bit[u] % 64);
    }
  }
  return reached;
}

// The write-after-read edges of every assign (computed on the job before any tick exists).
void add_war_edges(Ticks& t, const OpGraph& g, const std::vector<Part>& parts, int64_t pieces) {
  std::vector<int> assigns;
  for (int a = 0; a < g.size(); ++a)
    if (g.assign_target(a) >= 0) assigns.push_back(a);
  constexpr size_t kWords = 8;  // assigns per sweep: 512, so the bitsets stay small for any job
  const std::vector<int> order = consumers_first(g);
  std::vector<uint64_t> reached;
  for (size_t k = 0; k < assigns.size(); ++k) {
    const size_t block = k / (64 * kWords), in_block = k % (64 * kWords);
    if (in_block == 0) reached = assigns_reached(g, order, assigns, block * 64 * kWords, kWords);
    const int a = assigns[k], v = g.assign_target(a);
    auto before = [&](int r) {
      return (reached[static_cast<size_t>(r) * kWords + in_block / 64] >> (in_block % 64)) & 1;
    };
    std::vector<int> direct, per_piece;
    for (int r : memory_readers(g, v, a)) {
      if (before(r)) continue;
      if (parts[a] == Part::kOnce && parts[r] == Part::kPiece) per_piece.push_back(r);
      else if (!(parts[a] == Part::kPiece && parts[r] == Part::kOnce)) direct.push_back(r);
      // a once reader of a per-piece assign runs after all pieces: it reads the last write, no edge
    }
    for (int r : direct) t.wait(a, r);
    if (per_piece.empty()) continue;
    const int join = t.add_tick(g.op(a).name() + "-war", "join");
    for (int r : per_piece) t.wait(join, r);
    t.wait(a, t.add_ctrl_acc(join, pieces));
  }
}

// Note [Orders carried from piece to piece]
// An assign that runs per piece (a buffer such as BatchNorm's running mean under gradient accumulation, or under
// SSP every update) writes a variable the next piece reads: the readers of piece i + 1 must wait for the write
// of piece i, or a producer running pieces ahead reads the value from before it, and each piece updates the
// same old value. That edge points back, from a later op of the job to an earlier one, so it is no ctrl input
// (the job stays a DAG) but a carried one: reader r waits for assign a with lag 1 (r's piece i + 1 after a's
// piece i; r's piece 0 waits for nothing), which the runtime keeps as a register read lag pieces late. With
// the write-after-read edges of the same piece (a waits for r) the pieces take turns on the variable. An SSP
// proxy (Note [SSP] in ssp.cpp) waits for the update lag = its buffer_size pieces back instead: its copy may
// miss the last buffer_size - 1 updates. A reader in the once part reads the last write and needs no edge.
void add_carried_edges(Job& job, const OpGraph& g, const std::vector<Part>& parts) {
  for (int a = 0; a < g.size(); ++a) {
    const int v = g.assign_target(a);
    if (v < 0 || parts[a] != Part::kPiece) continue;
    for (int r : memory_readers(g, v, a)) {
      if (parts[r] != Part::kPiece || is_view(g.op(r))) continue;  // a view reads nothing; its readers do
      OpConf& reader = *job.mutable_ops(r);
      CarriedCtrl& c = *reader.add_carried_ctrl_inputs();
      c.set_op(g.op(a).name());
      c.set_lag(reader.op_type() == kSspProxy ? static_cast<int32_t>(int_attr(reader, "buffer_size")) : 1);
    }
  }
}

// The sink: it waits for every op nothing else waits for (the per-piece ones through an acc'd join tick).
void add_sink(Ticks& t, const OpGraph& g, int64_t pieces) {
  const std::vector<Part> parts = op_parts(g, t.added);  // the added ticks' edges too
  const int n = t.job.ops_size();
  std::vector<bool> consumed(n, false);
  for (int i = 0; i < g.size(); ++i) consumed[i] = !g.data_consumers(i).empty() || !g.ctrl_consumers(i).empty();
  for (const auto& edge : t.added) consumed[edge.second] = true;
  std::vector<int> once, per_piece;
  for (int i = 0; i < n; ++i) {
    if (consumed[i] || is_binding_op(t.job.ops(i))) continue;
    (pieces > 1 && parts[i] != Part::kOnce ? per_piece : once).push_back(i);
  }
  if (!per_piece.empty()) {
    const int join = t.add_tick("tick-pieces", "join");
    for (int i : per_piece) t.wait(join, i);
    once.push_back(t.add_ctrl_acc(join, pieces));
  }
  const int sink = t.add_tick("tick-sink", "sink");
  for (int i : once) t.wait(sink, i);
}

}  // namespace

void auto_tick(Job& job) {
  std::optional<OpGraph> graph;
  auto_tick(job, graph);
}

void auto_tick(Job& job, std::optional<OpGraph>& graph) {
  const int64_t pieces = job_pieces(job);
  // Indexes the ops as they are; the added ticks go after them.
  const OpGraph& g = graph ? *graph : graph.emplace(job);
  RILL_ASSERT(&g.job() == &job && g.size() == job.ops_size(), "auto_tick given the op graph of another job");
  Ticks t(job, g);
  const std::vector<Part> parts = op_parts(g);
  const int original = g.size();
  std::vector<bool> needs_tick(original, false);
  for (int i = 0; i < original; ++i) needs_tick[i] = !is_binding_op(g.op(i)) && !waits_for_a_task(g, i);
  add_war_edges(t, g, parts, pieces);
  if (pieces > 1) add_carried_edges(job, g, parts);
  const int source = t.add_tick("tick-source", "source");
  int once_tick = -1;  // the acc of the source tick, made when an op of the once part needs it
  for (int i = 0; i < original; ++i) {
    if (!needs_tick[i]) continue;
    const bool once = pieces > 1 && parts[i] == Part::kOnce && g.op(i).op_type() != kAcc;
    if (once && once_tick < 0) once_tick = t.add_ctrl_acc(source, pieces);
    t.wait(i, once ? once_tick : source);
  }
  add_sink(t, g, pieces);
  sort_topologically(job, g, t.added);
  graph.reset();
}

}  // namespace rill::graph
