// auto_tick: the ticks that bound an iteration and the write-after-read edges of the assigns.
//   - A source tick starts each piece: every op with no produced input (it reads only variables and inputs, or
//     nothing) waits for it; in the once part (Note [Pieces and the once part] in op_graph.cpp) it waits for an
//     acc of the source tick, which fires once all pieces have started.
//   - An assign waits for every other reader of its variable that is not already before it (an ancestor has
//     read by the time the assign acts), through an acc'd join tick when it runs once and the readers per piece.
//   - A sink tick waits for every op nothing else waits for, the per-piece ones through an acc'd join tick.
#include <cstdint>
#include <string>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {
namespace {

OpConf* add_tick(Job& job, NameSet& names, const std::string& base, const std::string& kind) {
  OpConf* tick = add_op(job, names.fresh(base), kTick, "", 0);
  (*tick->mutable_attrs())["kind"].set_s(kind);
  return tick;
}

// An acc over the pieces of ctrl op `of`: it acts once all pieces of `of` acted.
std::string add_ctrl_acc(Job& job, NameSet& names, const std::string& of, int64_t pieces) {
  OpConf* acc = add_op(job, names.fresh(of + "-acc"), kAcc, "", 0);
  (*acc->mutable_attrs())["repeat"].set_i(pieces);
  acc->add_ctrl_inputs(of);
  return acc->name();
}

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
void add_war_edges(Job& job, NameSet& names, const OpGraph& g, const std::vector<Part>& parts, int64_t pieces) {
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
    OpConf& assign = *job.mutable_ops(a);
    for (int r : direct) add_ctrl(assign, g.op(r).name());
    if (per_piece.empty()) continue;
    OpConf* join = add_tick(job, names, assign.name() + "-war", "join");
    for (int r : per_piece) join->add_ctrl_inputs(g.op(r).name());
    add_ctrl(assign, add_ctrl_acc(job, names, join->name(), pieces));
  }
}

void add_sink(Job& job, NameSet& names, int64_t pieces) {
  const OpGraph g(job);
  const std::vector<Part> parts = op_parts(g);
  std::vector<std::string> once, per_piece;
  for (int i = 0; i < g.size(); ++i) {
    if (is_binding_op(g.op(i)) || !g.data_consumers(i).empty() || !g.ctrl_consumers(i).empty()) continue;
    (pieces > 1 && parts[i] != Part::kOnce ? per_piece : once).push_back(g.op(i).name());
  }
  if (!per_piece.empty()) {
    OpConf* join = add_tick(job, names, "tick-pieces", "join");
    for (const std::string& name : per_piece) join->add_ctrl_inputs(name);
    once.push_back(add_ctrl_acc(job, names, join->name(), pieces));
  }
  OpConf* sink = add_tick(job, names, "tick-sink", "sink");
  for (const std::string& name : once) sink->add_ctrl_inputs(name);
}

}  // namespace

void auto_tick(Job& job) {
  const int64_t pieces = job_pieces(job);
  NameSet names(job);
  const int original = job.ops_size();
  std::vector<bool> needs_tick(original, false);
  {
    const OpGraph g(job);  // indexes the ops as they are; the added ticks go after them
    const std::vector<Part> parts = op_parts(g);
    for (int i = 0; i < original; ++i) needs_tick[i] = !is_binding_op(g.op(i)) && !waits_for_a_task(g, i);
    add_war_edges(job, names, g, parts, pieces);
    OpConf* source_tick = add_tick(job, names, "tick-source", "source");
    const std::string source = source_tick->name();
    std::string once_tick;  // the acc of the source tick, made when an op of the once part needs it
    for (int i = 0; i < original; ++i) {
      if (!needs_tick[i]) continue;
      const bool once = pieces > 1 && parts[i] == Part::kOnce && g.op(i).op_type() != kAcc;
      if (once && once_tick.empty()) once_tick = add_ctrl_acc(job, names, source, pieces);
      add_ctrl(*job.mutable_ops(i), once ? once_tick : source);
    }
  }
  add_sink(job, names, pieces);
  sort_topologically(job);
}

}  // namespace rill::graph
