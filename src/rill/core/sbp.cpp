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

std::string nd_str(const NdSbp& sbp) {
  std::string out;
  for (const Sbp& s : sbp) out += (out.empty() ? "" : ",") + s.str();
  return out;
}

NdSbp parse_nd(const std::string& s) {
  NdSbp out;
  size_t start = 0;
  for (size_t comma = s.find(','); ; comma = s.find(',', start)) {
    out.push_back(Sbp::parse(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Shape local_shape(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& mesh) {
  RILL_ASSERT(sbp.size() == mesh.size(), "an SBP of ", sbp.size(), " dims on a mesh of ", mesh.size());
  Shape out = logical;
  for (size_t d = 0; d < sbp.size(); ++d)
    if (sbp[d].is_split()) out[static_cast<size_t>(sbp[d].axis)] /= mesh[d];
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
