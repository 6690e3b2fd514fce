#include "rill/ops/attrs.h"

#include <functional>

namespace rill {

size_t Attrs::hash() const {
  size_t h = values.size();
  for (const AttrValue& v : values) {
    hash_combine(h, v.index());
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            for (int64_t e : x) hash_combine(h, std::hash<int64_t>()(e));
          } else if constexpr (std::is_same_v<T, DType>) {
            hash_combine(h, static_cast<size_t>(x));
          } else if constexpr (std::is_same_v<T, std::monostate>) {
            hash_combine(h, size_t{0x9e37});
          } else {
            hash_combine(h, std::hash<T>()(x));
          }
        },
        v);
  }
  return h;
}

AttrsSym empty_attrs() {
  static const AttrsSym kEmpty = make_attrs({});
  return kEmpty;
}

}  // namespace rill
