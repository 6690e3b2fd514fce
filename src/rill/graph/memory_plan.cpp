#include "rill/graph/memory_plan.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rill/graph/attrs.h"
#include "rill/graph/id_index.h"
#include "rill/graph/task_id.h"
#include "rill/util/error.h"

namespace rill::graph {

// Note [The memory plan]
// Buffers may share memory only if their lifetimes cannot overlap however the
// actors run, so the plan first fixes the order: the tasks of each stream are
// chained in plan order (a topological order of the job), by a ctrl register
// from each task to the next where no register already orders the two. A
// stream's tasks share one worker thread, so the chain costs no parallelism.
// In that order a register owned by task p and last read (directly or through a
// view of it) by task c lives over [p, c], inclusive: an op's outputs are
// written while its inputs are read. Placement walks the order: at each task it
// takes memory for the registers the task produces (best fit among the freed
// blocks, else from the top of the arena) and then frees those whose last
// reader it is. The largest sum of simultaneously live bytes in the same order
// is a lower bound no placement can beat (live_bytes_lower_bound). Where best fit
// in order misses it and there are at most kMaxSizeOrdered registers, up to four
// more placements go largest first (by bytes, then by bytes times lifetime),
// each register into the lowest, or else the smallest, gap between the registers
// already placed whose lifetimes overlap its own (greedy by size, as TensorFlow
// Lite's arena planner does), stopping at the bound; the smallest is kept:
// fragmentation comes mostly from small buffers placed before large ones.
//
// A register produced or read on another stream than the main one (a graph transfer's: Note [Graph transfers] in
// comm/boxing.cpp) is not ordered against the main stream's tasks: it keeps memory of its own.
// Reuse needs each register written once per iteration in that order: with more
// than one piece (gradient accumulation) or more than one buffer per register
// (producers running pieces ahead), every register keeps memory of its own, as
// when JobConf.disabled_passes names "memory_reuse".

namespace {

constexpr int64_t kAlignment = 64;
// Placing by size costs time quadratic in the registers: beyond this many, best fit in order alone.
constexpr size_t kMaxSizeOrdered = 1024;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

/** Free memory of an arena that grows at its top: best fit, neighbours merged when freed. */
class Arena {
 public:
  int64_t take(int64_t n) {
    if (n == 0) return 0;
    auto fit = by_size_.lower_bound({n, -1});
    if (fit != by_size_.end()) {
      auto [size, offset] = *fit;
      erase(offset, size);
      if (size > n) insert(offset + n, size - n);
      return offset;
    }
    int64_t offset = top_;
    if (!by_offset_.empty()) {  // a free block at the top grows into the new space
      auto last = std::prev(by_offset_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        erase(last->first, last->second);
      }
    }
    top_ = offset + n;
    return offset;
  }

  void give(int64_t offset, int64_t n) {
    if (n == 0) return;
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.end() && next->first == offset + n) {
      n += next->second;
      erase(next->first, next->second);
    }
    auto prev = by_offset_.lower_bound(offset);
    if (prev != by_offset_.begin() && (--prev)->first + prev->second == offset) {
      offset = prev->first;
      n += prev->second;
      erase(prev->first, prev->second);
    }
    insert(offset, n);
  }

  int64_t top() const { return top_; }

 private:
  void insert(int64_t offset, int64_t n) {
    by_offset_.emplace(offset, n);
    by_size_.emplace(n, offset);
  }
  void erase(int64_t offset, int64_t n) {
    by_offset_.erase(offset);
    by_size_.erase({n, offset});
  }

  std::map<int64_t, int64_t> by_offset_;
  std::set<std::pair<int64_t, int64_t>> by_size_;  // (size, offset)
  int64_t top_ = 0;
};

struct Life {
  plan::Regst* regst;
  int start, end;  // plan positions of its producer and last reader
  int64_t bytes;
};

/** Best fit along the plan order (Note [The memory plan]); returns the arena's size. */
int64_t place_in_order(const std::vector<Life>& lives, int n, std::vector<int64_t>& offset) {
  std::vector<std::vector<int>> starts(n), ends(n);
  for (size_t i = 0; i < lives.size(); ++i) {
    starts[lives[i].start].push_back(static_cast<int>(i));
    ends[lives[i].end].push_back(static_cast<int>(i));
  }
  Arena arena;
  for (int k = 0; k < n; ++k) {
    for (int i : starts[k]) offset[i] = arena.take(lives[i].bytes);
    for (int i : ends[k]) arena.give(offset[i], lives[i].bytes);
  }
  return arena.top();
}

/** Largest key first: each register in the lowest (first_fit) or the smallest gap that holds it between the
 * registers placed before it whose lifetimes overlap its own (Note [The memory plan]); returns the size. */
template <typename Key>
int64_t place_by_size(const std::vector<Life>& lives, std::vector<int64_t>& offset, const Key& key, bool first_fit) {
  std::vector<int> order(lives.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(lives[a]) > key(lives[b]); });
  std::vector<int> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of the overlapping placed registers
  int64_t size = 0;
  for (int i : order) {
    const Life& l = lives[i];
    busy.clear();
    for (int j : placed)
      if (lives[j].start <= l.end && l.start <= lives[j].end) busy.emplace_back(offset[j], offset[j] + lives[j].bytes);
    std::sort(busy.begin(), busy.end());
    int64_t at = 0, best = -1, best_gap = 0;
    for (const auto& [begin, end] : busy) {
      const int64_t gap = begin - at;
      if (gap >= l.bytes && (best < 0 || (!first_fit && gap < best_gap))) {
        best = at;
        best_gap = gap;
      }
      at = std::max(at, end);
    }
    offset[i] = best < 0 ? at : best;
    size = std::max(size, offset[i] + l.bytes);
    placed.push_back(i);
  }
  return size;
}

// Everything of a task id but its index: the rank, device and stream it runs on.
int64_t stream_of(int64_t task_id) { return task_id >> kTaskIndexBits; }

/** Order each stream's tasks in plan order (Note [The memory plan]). */
void chain_streams(plan::Plan& p, const std::function<int64_t()>& next_id) {
  IdIndex regst_index(p.regsts());
  std::unordered_map<int64_t, int> last_on_stream;  // stream -> index of its latest task
  for (int k = 0; k < p.tasks_size(); ++k) {
    const int64_t id = p.tasks(k).id();
    auto [last, first] = last_on_stream.try_emplace(stream_of(id), k);
    if (first) continue;
    const int prev = std::exchange(last->second, k);
    const int64_t prev_id = p.tasks(prev).id();
    const plan::Task& t = p.tasks(k);
    bool ordered = std::any_of(t.in_regsts().begin(), t.in_regsts().end(), [&](int64_t r) {
      return p.regsts(regst_index.find(r)).producer() == prev_id;
    });
    if (ordered) continue;
    int ctrl = -1;
    for (int64_t r : p.tasks(prev).out_regsts())
      if (p.regsts(regst_index.find(r)).kind() == plan::REGST_CTRL) ctrl = regst_index.find(r);
    if (ctrl < 0) {
      plan::Regst& r = *p.add_regsts();
      r.set_id(next_id());
      r.set_kind(plan::REGST_CTRL);
      r.set_lbn(p.tasks(prev).name() + "/ctrl");
      r.set_producer(prev_id);
      r.set_count(1);
      ctrl = p.regsts_size() - 1;
      regst_index.add(r.id());
      p.mutable_tasks(prev)->add_out_regsts(r.id());
    }
    p.mutable_regsts(ctrl)->add_consumers(id);
    p.mutable_tasks(k)->add_in_regsts(p.regsts(ctrl).id());
  }
}

}  // namespace

int64_t desc_bytes(const plan::TensorDesc& d) {
  int64_t span = 1;
  for (int k = 0; k < d.shape_size(); ++k) {
    if (d.shape(k) == 0) return 0;
    span += (d.shape(k) - 1) * std::abs(d.strides(k));
  }
  return (d.offset() + span) * dtype_itemsize(graph::meta_from_proto(d)->dtype);
}

void plan_memory(plan::Plan& p, bool reuse, const std::function<int64_t()>& next_id) {
  reuse = reuse && p.pieces() <= 1 && std::all_of(p.regsts().begin(), p.regsts().end(), [](const plan::Regst& r) {
            return r.kind() != plan::REGST_OWNED || r.count() == 1;
          });
  if (reuse) chain_streams(p, next_id);

  const int n = p.tasks_size();
  const IdIndex position(p.tasks()), regst_index(p.regsts());  // task id -> index in plan order
  std::vector<int> owned(p.regsts_size(), -1);  // by index into p.regsts: the index into lives
  std::vector<Life> lives;
  for (int i = 0; i < p.regsts_size(); ++i) {
    plan::Regst& r = *p.mutable_regsts(i);
    if (r.kind() != plan::REGST_OWNED) continue;
    const int start = position.find(r.producer());
    RILL_ASSERT(start >= 0, "register ", r.lbn(), " names producer ", r.producer(), ", which the plan lacks");
    owned[i] = static_cast<int>(lives.size());
    lives.push_back({&r, start, start, round_up(desc_bytes(r.desc()) * r.count(), kAlignment)});
  }
  for (int i = 0; i < p.regsts_size(); ++i) {
    const plan::Regst& r = p.regsts(i);
    if (r.kind() != plan::REGST_OWNED && r.kind() != plan::REGST_VIEW) continue;
    const int root = r.kind() == plan::REGST_VIEW ? regst_index.find(r.alias_of()) : i;
    if (root < 0 || owned[root] < 0) continue;
    Life& life = lives[owned[root]];
    for (int64_t c : r.consumers()) life.end = std::max(life.end, position.find(c));  // each there: compiled
    // Read on another stream than its producer's (a graph transfer's thread): the chains order no task of one
    // stream against the other's, so the register lives the whole iteration, sharing no memory.
    const int64_t home = stream_of(p.regsts(root).producer());
    for (int64_t c : r.consumers())
      if (stream_of(c) != home) {
        life.start = 0;
        life.end = n - 1;
      }
  }
  for (Life& life : lives)  // made on a stream of its own (a transfer's received value): the same
    if (graph::decode_task_id(life.regst->producer()).stream != 0) {
      life.start = 0;
      life.end = n - 1;
    }

  std::vector<int64_t> change(n + 1, 0);
  for (const Life& l : lives) {
    change[l.start] += l.bytes;
    change[l.end + 1] -= l.bytes;
  }
  int64_t live = 0, bound = 0;
  for (int k = 0; k < n; ++k) bound = std::max(bound, live += change[k]);

  std::vector<int64_t> offset(lives.size(), 0);
  int64_t size = 0;
  if (reuse) {
    size = place_in_order(lives, n, offset);
    auto by_bytes = [](const Life& l) { return l.bytes; };
    auto by_area = [](const Life& l) { return l.bytes * (l.end - l.start + 1); };
    for (int key = 0; key < 4 && size > bound && lives.size() <= kMaxSizeOrdered; ++key) {
      std::vector<int64_t> other(lives.size(), 0);
      const bool first_fit = key % 2 == 0;
      const int64_t other_size = key < 2 ? place_by_size(lives, other, by_bytes, first_fit)
                                         : place_by_size(lives, other, by_area, first_fit);
      if (other_size < size) {
        size = other_size;
        offset.swap(other);
      }
    }
  } else {
    for (size_t i = 0; i < lives.size(); ++i) {
      offset[i] = size;
      size += lives[i].bytes;
    }
  }

  const int64_t chunk = next_id();
  for (size_t i = 0; i < lives.size(); ++i) {
    plan::MemBlock& b = *p.add_mem_blocks();
    b.set_id(next_id());
    b.set_chunk_id(chunk);
    b.set_offset(offset[i]);
    b.set_size(lives[i].bytes);
    lives[i].regst->set_mem_block_id(b.id());
    lives[i].regst->set_mem_offset(0);
  }
  plan::Chunk& c = *p.add_chunks();
  c.set_id(chunk);
  c.set_size(size);
  p.set_planned_peak_bytes(size);
  p.set_live_bytes_lower_bound(bound);
}

}  // namespace rill::graph
