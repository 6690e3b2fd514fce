// SBP signatures (Note [SBP signatures] in ops/sbp.cpp): which layouts over the ranks of a placement an op can
// compute on locally, each rank running the op's own kernel on its slices. An op family states its rules beside
// its schemas (OpSchema::sbp); elementwise ops have one by default; every op also runs with every tensor
// broadcast, which is always right, so an op without a rule still runs in a global graph.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "rill/core/sbp.h"
#include "rill/ops/attrs.h"

namespace rill {

struct OpSchema;

/** One way to run an op over a placement: the SBP each input must have and the SBP each output then has. */
struct SbpSignature {
  std::vector<Sbp> in, out;
  bool operator==(const SbpSignature&) const = default;
};

/** What an SBP rule sees: the op call's logical metas and attrs. */
struct SbpContext {
  const OpSchema& op;
  std::span<const MetaSym> inputs;
  std::span<const MetaSym> outputs;
  const Attrs& attrs;
  template <typename T>
  const T& attr(std::string_view name) const;
};

/** The signatures an op accepts beyond the all-broadcast one, best first. */
using SbpFn = std::vector<SbpSignature> (*)(const SbpContext&);
/** An op's attrs on one rank when it runs signature sig over n ranks: for ops whose attrs hold sizes. */
using LocalAttrsFn = AttrsSym (*)(const SbpContext&, const SbpSignature& sig, int64_t n);

namespace ops {
/** The signatures op accepts for ctx (its rule's, or the elementwise one for an elementwise op without a rule),
 * then the all-broadcast one. */
std::vector<SbpSignature> sbp_signatures(const SbpContext& ctx);
/** The elementwise rule: for each axis of the outputs' shape, every input split along the axis it broadcasts to
 * (broadcast where its size is 1 or it has no such axis) and every output of that shape split along it (0-d
 * outputs broadcast). Optimizer updates and fused chains use it too. */
std::vector<SbpSignature> elementwise_sbp(const SbpContext& ctx);
/** The rule of a view or reduction that maps each input axis to one output axis (or none): in S(k) -> out
 * S(axis_map[k]), and P -> P. */
std::vector<SbpSignature> mapped_axes_sbp(std::span<const int64_t> axis_map, bool partial);
/** Ops that compute each sample (dim 0) alone, and with channels_too each channel (dim 1) too (pooling): every
 * input but those of `whole` (broadcast: a weight) split along that dim gives outputs split alike. */
std::vector<SbpSignature> per_sample_sbp(const SbpContext& ctx, std::initializer_list<int> whole = {},
                                         bool channels_too = false);
/** The attrs of an op whose int[] attr `input_size` is its output's shape, with the output's split dim divided:
 * the gradients of pooling and convolution. */
AttrsSym local_input_size(const SbpContext& ctx, const SbpSignature& sig, int64_t n);
}  // namespace ops

}  // namespace rill
