#include "rill/core/sbp.h"

#include "rill/util/error.h"

namespace rill {

std::string Sbp::str() const {
  switch (kind) {
    case Kind::kSplit: return "S(" + std::to_string(axis) + ")";
    case Kind::kBroadcast: return "B";
    case Kind::kPartialSum: return "P";
  }
  return "?";
}

Sbp Sbp::parse(const std::string& s) {
  if (s == "B") return broadcast();
  if (s == "P") return partial_sum();
  if (s.size() > 3 && s.starts_with("S(") && s.back() == ')') return split(std::stoi(s.substr(2, s.size() - 3)));
  RILL_FAIL(Value, "[sbp] '", s, "' is not an SBP: expected S(axis), B or P");
}

Shape local_shape(const Shape& logical, const Sbp& sbp, int64_t n) {
  Shape out = logical;
  if (sbp.is_split()) out[static_cast<size_t>(sbp.axis)] /= n;
  return out;
}

Tensor make_global(MetaSym logical, GlobalInfo info) {
  Tensor t = Tensor::empty(logical);
  info.logical = logical;
  t.storage()->set_poison(std::make_shared<const Error>(
      ErrorKind::kRuntime,
      "[global tensor] a global tensor has no value of its own on a rank: rill computes with global tensors "
      "inside nn.Graph only (eager compute on them is out of scope). Pass it to a graph, or call .to_local() for "
      "this rank's local tensor"));
  t.storage()->set_global(std::make_shared<const GlobalInfo>(std::move(info)));
  return t;
}

const GlobalInfo* global_info(const Tensor& t) {
  const GlobalInfo* g = t.storage()->global().get();
  return g != nullptr && g->logical == t.meta() && t.offset() == 0 ? g : nullptr;
}

}  // namespace rill
