// Op attributes: the non-tensor, non-scalar arguments of an op (dims, keepdim,
// dtype, ...), in signature order (Note [Arguments of an op call] in op_schema.h),
// interned so they can key the inference cache.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "rill/core/dtype.h"
#include "rill/core/shape.h"
#include "rill/util/symbol.h"

namespace rill {

/** One attribute value; monostate is None, for an optional argument not given. */
using AttrValue = std::variant<bool, int64_t, double, std::vector<int64_t>, DType, std::string, std::monostate>;

/** The attributes of one op call, in the order its schema lists them. */
struct Attrs {
  std::vector<AttrValue> values;
  bool operator==(const Attrs& o) const { return values == o.values; }
  size_t hash() const;
  size_t size() const { return values.size(); }
  bool get_bool(size_t i) const { return std::get<bool>(values.at(i)); }
  int64_t get_int(size_t i) const { return std::get<int64_t>(values.at(i)); }
  double get_double(size_t i) const { return std::get<double>(values.at(i)); }
  const std::vector<int64_t>& get_ints(size_t i) const { return std::get<std::vector<int64_t>>(values.at(i)); }
  DType get_dtype(size_t i) const { return std::get<DType>(values.at(i)); }
  const std::string& get_string(size_t i) const { return std::get<std::string>(values.at(i)); }
};

/** Interned attributes. */
using AttrsSym = Symbol<Attrs>;

/** Intern a list of attribute values. */
inline AttrsSym make_attrs(std::vector<AttrValue> values) { return AttrsSym::intern(Attrs{std::move(values)}); }
/** The empty attribute list (interned once). */
AttrsSym empty_attrs();

}  // namespace rill
