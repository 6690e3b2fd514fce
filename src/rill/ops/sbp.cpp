#include "rill/ops/sbp.h"

#include <algorithm>

#include "rill/ops/op_schema.h"

namespace rill {

// Note [SBP signatures]
// A graph over a placement of n ranks runs each op on every rank, on the rank's slices of its inputs. A signature
// says which slices make that right: matmul with its first input split along rows and its second broadcast gives
// the rows of the product on each rank (S(0) x B -> S(0)); a sum over a split axis gives each rank a summand of
// the result (S(k) -> P). graph/passes/sbp.cpp picks one signature per op, the cheapest in bytes the compiler
// must move to give the op's inputs the SBP it asks for (boxing), and lowers the job to one rank's shapes. A rule
// lists only signatures whose local computation is exact; the all-broadcast signature, every rank computing the
// whole op, is right for any op that draws no random numbers, and is always offered last.

template <typename T>
const T& SbpContext::attr(std::string_view name) const {
  return attr_of<T>(op, attrs, name);
}
template const int64_t& SbpContext::attr<int64_t>(std::string_view) const;
template const bool& SbpContext::attr<bool>(std::string_view) const;
template const std::vector<int64_t>& SbpContext::attr<std::vector<int64_t>>(std::string_view) const;

namespace ops {

std::vector<SbpSignature> elementwise_sbp(const SbpContext& ctx) {
  int64_t ndim = 0;
  for (const MetaSym& m : ctx.outputs) ndim = std::max<int64_t>(ndim, m->ndim());
  std::vector<SbpSignature> out;
  for (int64_t k = 0; k < ndim; ++k) {
    SbpSignature sig;
    for (const MetaSym& m : ctx.inputs) {
      const int64_t aligned = k - (ndim - m->ndim());
      const bool broadcasts = aligned < 0 || m->shape[static_cast<size_t>(aligned)] == 1;
      sig.in.push_back(broadcasts ? Sbp::broadcast() : Sbp::split(static_cast<int32_t>(aligned)));
    }
    for (const MetaSym& m : ctx.outputs)
      sig.out.push_back(m->ndim() == ndim ? Sbp::split(static_cast<int32_t>(k)) : Sbp::broadcast());
    out.push_back(std::move(sig));
  }
  return out;
}

std::vector<SbpSignature> mapped_axes_sbp(std::span<const int64_t> axis_map, bool partial) {
  std::vector<SbpSignature> out;
  for (size_t k = 0; k < axis_map.size(); ++k) {
    if (axis_map[k] >= 0) {
      out.push_back({{Sbp::split(static_cast<int32_t>(k))}, {Sbp::split(static_cast<int32_t>(axis_map[k]))}});
    } else if (partial) {
      out.push_back({{Sbp::split(static_cast<int32_t>(k))}, {Sbp::partial_sum()}});
    }
  }
  out.push_back({{Sbp::partial_sum()}, {Sbp::partial_sum()}});
  return out;
}

std::vector<SbpSignature> per_sample_sbp(const SbpContext& ctx, std::initializer_list<int> whole,
                                         bool channels_too) {
  std::vector<SbpSignature> out;
  for (int32_t dim = 0; dim < (channels_too ? 2 : 1); ++dim) {
    SbpSignature sig;
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      const bool broadcast = std::find(whole.begin(), whole.end(), static_cast<int>(k)) != whole.end();
      sig.in.push_back(broadcast ? Sbp::broadcast() : Sbp::split(dim));
    }
    sig.out.assign(ctx.outputs.size(), Sbp::split(dim));
    out.push_back(std::move(sig));
  }
  return out;
}

AttrsSym local_input_size(const SbpContext& ctx, const SbpSignature& sig, int64_t n) {
  std::vector<AttrValue> values = ctx.attrs.values;
  auto& size = std::get<std::vector<int64_t>>(values[ctx.op.attr_index("input_size")]);
  if (sig.out[0].is_split()) size[static_cast<size_t>(sig.out[0].axis)] /= n;
  return make_attrs(std::move(values));
}

std::vector<SbpSignature> sbp_signatures(const SbpContext& ctx) {
  std::vector<SbpSignature> out;
  if (ctx.op.sbp != nullptr) {
    out = ctx.op.sbp(ctx);
  } else if (ctx.op.flags.elementwise) {
    out = elementwise_sbp(ctx);
  }
  SbpSignature all_b;
  all_b.in.assign(ctx.inputs.size(), Sbp::broadcast());
  all_b.out.assign(ctx.outputs.size(), Sbp::broadcast());
  out.push_back(std::move(all_b));
  return out;
}

}  // namespace ops
}  // namespace rill
