// Between a plan's (or a job's) attribute and scalar messages and the interned
// Attrs / Scalars an op call carries (Note [Arguments of an op call] in
// ops/op_schema.h): by signature name in the protos, in signature order in calls.
#pragma once

#include <string>
#include <vector>

#include "rill/core/scalar.h"
#include "rill/core/tensor_meta.h"
#include "rill/ops/op_schema.h"
#include "rill/graph/plan.pb.h"

namespace rill::graph {

using AttrMap = google::protobuf::Map<std::string, plan::AttrValue>;

/** attrs (in op's signature order) as messages by name, into out. */
void attrs_to_proto(const OpSchema& op, const Attrs& attrs, AttrMap* out);
/** The op call's interned attrs from messages by name; raises RuntimeError naming the op for a missing or
 * mistyped attr. */
AttrsSym attrs_from_proto(const OpSchema& op, const AttrMap& attrs);
plan::ScalarValue scalar_to_proto(Scalar s);
Scalar scalar_from_proto(const plan::ScalarValue& s);
/** A meta (and an offset in elements) as a TensorDesc, and back. */
plan::TensorDesc desc_to_proto(const TensorMeta& meta, int64_t offset = 0);
MetaSym meta_from_proto(const plan::TensorDesc& desc);
/** One attr value as text ("[2, 3]", "float32", "None"), for printing jobs and plans. */
std::string attr_str(const plan::AttrValue& v);

}  // namespace rill::graph
