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

/** The shape of meta's slice on one rank of n under sbp (meta's own shape unless split). */
Shape local_shape(const Shape& logical, const Sbp& sbp, int64_t n);

/** What makes a tensor global: its placement (ranks, and the process group the graph's collectives use), its SBP
 * (one per placement dim; rill's placements are 1-D) and this rank's local tensor. */
struct GlobalInfo {
  std::vector<int64_t> ranks;
  int64_t group = 0;
  std::vector<Sbp> sbp;
  MetaSym logical;  // the global tensor's own meta: a view of it (another meta on the storage) is not global
  Tensor local;
};

/** A global tensor of logical meta over info's placement (info.logical is set here). */
Tensor make_global(MetaSym logical, GlobalInfo info);
/** t's global info when t is a global tensor (not a view of one), else null. */
const GlobalInfo* global_info(const Tensor& t);

}  // namespace rill
