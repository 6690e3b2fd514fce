#include "rill/ops/cast_into.h"

#include <vector>

#include "rill/ops/attrs.h"

namespace rill::ops {

void cast_into(const TensorArg& in, const TensorArg& out) {
  static const OpSchema& cast = get("cast");
  std::vector<AttrValue> dtype;  // built one by one: GCC 12 misreads a braced list of variants as uninitialised
  dtype.emplace_back(out.meta->dtype);
  const AttrsSym attrs = make_attrs(std::move(dtype));
  cast.kernel(DeviceType::kCPU)(KernelContext{cast, {&in, 1}, {&out, 1}, *attrs, {}});
}

}  // namespace rill::ops
