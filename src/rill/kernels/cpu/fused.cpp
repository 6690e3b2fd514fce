// The CPU kernel of _fused_elementwise (ops/fused.h): the chain evaluated tile by tile with each step's own
// vectorised kernel. See Note [Tiles of a fused chain].
#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rill/kernels/cpu/kernels.h"
#include "rill/ops/fused.h"
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"
#include "rill/util/parallel.h"

namespace rill::cpu {
namespace {

// Note [Tiles of a fused chain]
// Every step of a fused chain makes the same shape S, and each input of the op broadcasts to S. A tile is a run
// of whole rows of S's dim 0 (rows of `inner` elements): an input as large as S along dim 0 is sliced to the
// tile's rows (any strides), one that broadcasts along dim 0 is read whole by every tile, which the steps'
// kernels broadcast as they always do. When every input is either dense with S's elements or a single element,
// S is read as one dim of N elements instead, so tiles are kTileElems long whatever S's shape, unless a step is a
// row step (Note [Row steps] in ops/fused.cpp), which needs whole rows of its dim in a tile. A tile runs
// every step in order: a value the op returns is written straight into its output at the tile's offset; the
// others go to scratch slots of one tile each, reused once their last reader ran, so a tile's values stay in
// L1/L2 between steps. Tiles run in parallel on the intra-op pool (the steps' own parallel loops then run
// inline), each thread with its own scratch, grown once and kept: a steady state allocates nothing.
// The tile layout of one call depends on the program and the input metas only: it is built once per (attrs,
// input metas) and cached, since both are interned.

constexpr int64_t kTileElems = 8192;   // a float32 tile is 32 KiB: a chain's live tiles stay in L2
constexpr int64_t kParallelElems = 32768;

struct InputLayout {
  bool sliced = false;          // advances with the tile (else read whole by every tile)
  int64_t row_bytes = 0;        // bytes between rows of dim 0 (sliced)
  MetaSym full;                 // the meta a step sees for a full tile
  MetaSym tail;                 // and for the last, shorter tile
};

struct StepLayout {
  KernelFn kernel = nullptr;
  int32_t output = -1;          // the op's output it writes, or -1 for a scratch slot
  int64_t slot_offset = 0;      // bytes into the thread's scratch (output < 0)
  int64_t itemsize = 0;
  MetaSym full, tail;
};

struct Layout {
  const fused::Program* program = nullptr;  // the call's program (program_of's, kept as long as its attrs)
  int64_t rows = 0, inner = 1, rows_per_tile = 1, tiles = 0;
  std::vector<InputLayout> inputs;
  std::vector<StepLayout> steps;
  int64_t scratch_bytes = 0;
};

Shape with_rows(const Shape& s, int64_t rows) {
  Shape out = s;
  out[0] = rows;
  return out;
}

std::unique_ptr<Layout> make_layout(const fused::Program& p, std::span<const TensorArg> inputs,
                                    std::span<const TensorArg> outputs) {
  auto l = std::make_unique<Layout>();
  l->program = &p;
  const TensorMeta& out0 = *outputs[0].meta;
  const Shape& shape = out0.shape;
  const int64_t n = out0.numel;
  bool flat = shape.size() != 1 && !fused::has_row_steps(p);  // row steps: tiles of whole rows (Note [Row steps])
  for (const TensorArg& in : inputs)
    flat = flat && (in.meta->numel == 1 || (in.meta->contiguous && in.meta->numel == n));
  const Shape view = shape.empty() ? Shape{} : flat ? Shape{n} : shape;
  l->rows = view.empty() ? 1 : view[0];
  l->inner = view.empty() || l->rows == 0 ? 1 : n / l->rows;
  l->rows_per_tile = std::max<int64_t>(1, kTileElems / std::max<int64_t>(1, l->inner));
  if (view.empty()) l->rows_per_tile = 1;
  l->tiles = (l->rows + l->rows_per_tile - 1) / l->rows_per_tile;
  const int64_t tail_rows = l->rows - (l->tiles - 1) * l->rows_per_tile;
  auto tile_meta = [&](const TensorMeta& m, int64_t rows) {
    if (flat) return make_contiguous_meta({rows}, m.dtype, m.device);
    return make_meta(with_rows(m.shape, rows), m.strides, m.dtype, m.device);
  };
  for (const TensorArg& in : inputs) {
    const TensorMeta& m = *in.meta;
    InputLayout il;
    if (!view.empty() && flat && m.numel != 1) {
      il.sliced = true;
      il.row_bytes = dtype_itemsize(m.dtype);
    } else if (!view.empty() && !flat && m.ndim() == static_cast<int64_t>(shape.size()) && m.shape[0] == l->rows &&
               l->rows > 1) {
      il.sliced = true;
      il.row_bytes = m.strides[0] * dtype_itemsize(m.dtype);
    }
    if (il.sliced) {
      il.full = tile_meta(m, l->rows_per_tile);
      il.tail = tile_meta(m, tail_rows);
    } else if (flat && !view.empty()) {
      // A single element read by every tile: as a 0-dim tensor, which broadcasts to the tile's one dim.
      il.full = il.tail = make_contiguous_meta({}, m.dtype, m.device);
    } else {
      il.full = il.tail = MetaSym::intern(m);
    }
    l->inputs.push_back(il);
  }
  // Each step's dtype: the op's outputs carry the returned ones; the others are found from the steps' inference
  // on the tile metas (the op's inference checked the program on these inputs already).
  std::vector<int64_t> last_read(p.steps.size(), -1);
  for (size_t j = 0; j < p.steps.size(); ++j)
    for (const fused::Ref& r : p.steps[j].inputs)
      if (r.step) last_read[r.index] = static_cast<int64_t>(j);
  std::vector<int32_t> output_of(p.steps.size(), -1);
  for (size_t k = 0; k < p.outputs.size(); ++k) output_of[p.outputs[k]] = static_cast<int32_t>(k);
  std::vector<MetaSym> metas;
  std::vector<int64_t> slot_bytes;          // per slot
  std::vector<int64_t> slot_free_after;     // the step after which the slot's value is dead
  std::vector<int32_t> slot_of(p.steps.size(), -1);
  for (size_t j = 0; j < p.steps.size(); ++j) {
    const fused::Step& s = p.steps[j];
    StepLayout sl;
    sl.kernel = s.op->kernel(DeviceType::kCPU);
    RILL_CHECK(sl.kernel, Runtime, "[", fused::kOpName, "] step ", j, " (", s.op->name, ") has no CPU kernel");
    std::vector<MetaSym> ins;
    for (const fused::Ref& r : s.inputs)
      ins.push_back(r.step ? metas[r.index] : l->inputs[r.index].full);
    const TensorMeta& out = *s.op->infer(InferContext{*s.op, ins, s.scalars, *s.attrs}).outputs[0];
    sl.itemsize = dtype_itemsize(out.dtype);
    sl.full = make_contiguous_meta(view.empty() ? shape : flat ? Shape{l->rows_per_tile}
                                                               : with_rows(shape, l->rows_per_tile),
                                   out.dtype, out.device);
    sl.tail = view.empty() ? sl.full
                           : make_contiguous_meta(flat ? Shape{tail_rows} : with_rows(shape, tail_rows), out.dtype,
                                                  out.device);
    metas.push_back(sl.full);
    sl.output = output_of[j];
    if (sl.output < 0) {
      const int64_t bytes = (sl.full->numel * sl.itemsize + 63) / 64 * 64;
      int32_t slot = -1;
      for (size_t k = 0; k < slot_bytes.size() && slot < 0; ++k)
        if (slot_free_after[k] < static_cast<int64_t>(j)) slot = static_cast<int32_t>(k);
      if (slot < 0) {
        slot = static_cast<int32_t>(slot_bytes.size());
        slot_bytes.push_back(0);
        slot_free_after.push_back(0);
      }
      slot_bytes[slot] = std::max(slot_bytes[slot], bytes);
      slot_free_after[slot] = std::max<int64_t>(last_read[j], static_cast<int64_t>(j));
      slot_of[j] = slot;
    }
    l->steps.push_back(sl);
  }
  std::vector<int64_t> slot_offset(slot_bytes.size());
  for (size_t k = 0; k < slot_bytes.size(); ++k) {
    slot_offset[k] = l->scratch_bytes;
    l->scratch_bytes += slot_bytes[k];
  }
  for (size_t j = 0; j < p.steps.size(); ++j)
    if (slot_of[j] >= 0) l->steps[j].slot_offset = slot_offset[slot_of[j]];
  return l;
}

struct LayoutKey {
  const Attrs* attrs;
  std::vector<const TensorMeta*> metas;  // inputs, then outputs
  bool operator==(const LayoutKey&) const = default;
};
struct LayoutKeyHash {
  size_t operator()(const LayoutKey& k) const {
    size_t h = std::hash<const void*>()(k.attrs);
    for (const TensorMeta* m : k.metas) h = h * 1000003u ^ std::hash<const void*>()(m);
    return h;
  }
};

// The program is decoded (program_of) only when a layout is made: a call that finds its layout takes one lock.
const Layout& layout_of(const KernelContext& c) {
  struct Cache {
    std::mutex mutex;
    std::unordered_map<LayoutKey, std::unique_ptr<Layout>, LayoutKeyHash> layouts;
  };
  static Cache* cache = [] {  // leaked, like the interned metas and attrs it keys on
    auto* fresh = new Cache();
    fork::guard_mutex(&fresh->mutex);
    return fresh;
  }();
  // One key per thread, reused: looking a layout up allocates nothing once the vector has grown.
  thread_local LayoutKey key;
  key.attrs = &c.attrs;
  key.metas.clear();
  for (const TensorArg& a : c.inputs) key.metas.push_back(a.meta);
  for (const TensorArg& a : c.outputs) key.metas.push_back(a.meta);
  std::lock_guard<std::mutex> lock(cache->mutex);
  auto it = cache->layouts.find(key);
  if (it == cache->layouts.end()) it = cache->layouts.emplace(key, make_layout(fused::program_of(c.attrs), c.inputs, c.outputs)).first;
  return *it->second;
}

void run_tiles(const KernelContext& c, const fused::Program& p, const Layout& l, int64_t begin, int64_t end) {
  thread_local std::unique_ptr<std::byte[]> scratch;
  thread_local int64_t scratch_size = 0;
  if (scratch_size < l.scratch_bytes) {
    scratch = std::make_unique<std::byte[]>(static_cast<size_t>(l.scratch_bytes));
    scratch_size = l.scratch_bytes;
  }
  std::byte* base = scratch.get();
  TensorArg values[fused::kMaxSteps];
  TensorArg in_args[fused::kMaxStepInputs];
  for (int64_t t = begin; t < end; ++t) {
    const int64_t row0 = t * l.rows_per_tile;
    const bool tail = t + 1 == l.tiles;
    for (size_t j = 0; j < p.steps.size(); ++j) {
      const fused::Step& s = p.steps[j];
      const StepLayout& sl = l.steps[j];
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        const fused::Ref r = s.inputs[k];
        if (r.step) {
          in_args[k] = values[r.index];
        } else {
          const InputLayout& il = l.inputs[r.index];
          auto* data = static_cast<std::byte*>(c.inputs[r.index].data);
          in_args[k] = TensorArg{il.sliced ? data + row0 * il.row_bytes : data, (tail ? il.tail : il.full).get()};
        }
      }
      void* out = sl.output >= 0
                      ? static_cast<void*>(static_cast<std::byte*>(c.outputs[sl.output].data) +
                                           row0 * l.inner * sl.itemsize)
                      : static_cast<void*>(base + sl.slot_offset);
      values[j] = TensorArg{out, (tail ? sl.tail : sl.full).get()};
      sl.kernel(KernelContext{*s.op, std::span<const TensorArg>(in_args, s.inputs.size()),
                              std::span<const TensorArg>(&values[j], 1), *s.attrs, s.scalars});
    }
  }
}

void fused_elementwise_kernel(const KernelContext& c) {
  const Layout& l = layout_of(c);
  const fused::Program& p = *l.program;
  if (l.tiles == 0 || c.outputs[0].meta->numel == 0) return;
  const int64_t grain = std::max<int64_t>(1, kParallelElems / (l.rows_per_tile * l.inner));
  parallel::parallel_for(0, l.tiles, grain, [&](int64_t b, int64_t e) { run_tiles(c, p, l, b, e); });
}

}  // namespace

void register_fused_kernels() { ops::set_cpu_kernel(fused::kOpName, fused_elementwise_kernel); }

}  // namespace rill::cpu
