// The global view (DESIGN.md §6, docs/global.md): how a tensor of a graph is laid out over the ranks of its
// placement. An SBP is Split along an axis (each rank holds one equal slice), Broadcast (each rank holds all of
// it) or Partial sum (each rank holds a summand). A global tensor is a tensor of its logical meta without memory
// of its own (every eager read of it raises the error its storage carries) whose storage knows its placement, its
// SBP and the rank's local tensor, which a graph launch binds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/core/tensor.h"

namespace rill {

/** One SBP: split(axis), broadcast or partial_sum. */
struct Sbp {
  enum class Kind : uint8_t { kSplit, kBroadcast, kPartialSum };
  Kind kind = Kind::kBroadcast;
  int32_t axis = 0;  // kSplit

  static Sbp split(int32_t axis) { return {Kind::kSplit, axis}; }
  static Sbp broadcast() { return {}; }
  static Sbp partial_sum() { return {Kind::kPartialSum, 0}; }
  bool is_split() const { return kind == Kind::kSplit; }
  bool is_broadcast() const { return kind == Kind::kBroadcast; }
  bool is_partial() const { return kind == Kind::kPartialSum; }
  bool operator==(const Sbp&) const = default;
  /** "S(0)", "B", "P": the job's spelling (graph/job.proto). */
  std::string str() const;
  /** Parses str()'s spelling; raises ValueError otherwise. */
  static Sbp parse(const std::string& s);
};

/** One SBP per dim of a placement's mesh (Note [Meshes]): one for a list of ranks. */
using NdSbp = std::vector<Sbp>;
/** "S(0)" for one dim, "S(0),B" for two: the job's spelling. */
std::string nd_str(const NdSbp& sbp);
/** Parses nd_str's spelling; raises ValueError otherwise. */
NdSbp parse_nd(const std::string& s);
/** The shape of a rank's slice of a tensor of shape logical laid out as sbp over a mesh of shape mesh: each split
 * axis divided by the size of its mesh dim. */
Shape local_shape(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& mesh);

// Note [Meshes]
// A placement is a list of ranks (rill.placement("cpu", ranks=[0, 1, 2, 3])) or a mesh of them, a nested list
// (ranks=[[0, 1], [2, 3]]: mesh [2, 2], its ranks listed row-major). A tensor on a mesh has an SBP per mesh dim,
// applied dim after dim: (S(0), B) splits the rows over mesh dim 0 and broadcasts each half along dim 1; (S(0),
// S(0)) splits each half again. The ranks of a mesh that differ only in their coordinate along dim d form a line
// of dim d; each line has a process group of its own, in which the collectives that change that dim's SBP run.
// A placement records, per dim d in order, the group of each of d's lines, in the row-major order of the other
// coordinates (dim_groups); a list of ranks is a mesh of one dim, whose one line's group is the placement's.

/** What makes a tensor global: its placement (ranks, and the process group the graph's collectives use; a mesh,
 * Note [Meshes]), its SBP (one per mesh dim) and this rank's local tensor. */
struct GlobalInfo {
  std::vector<int64_t> ranks;
  int64_t group = 0;
  NdSbp sbp;
  MetaSym logical;  // the global tensor's own meta: a view of it (another meta on the storage) is not global
  Tensor local;
  std::vector<int64_t> mesh;        // the mesh's shape; empty: one dim, the ranks
  std::vector<int64_t> dim_groups;  // per mesh dim, the group of each of its lines; empty for one dim
};

/** A global tensor of logical meta over info's placement (info.logical is set here). */
Tensor make_global(MetaSym logical, GlobalInfo info);
/** t's global info when t is a global tensor (not a view of one), else null. */
const GlobalInfo* global_info(const Tensor& t);

}  // namespace rill
