#include "rill/graph/attrs.h"

#include <sstream>

#include "rill/util/error.h"

namespace rill::graph {
namespace {

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (dtype_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  RILL_FAIL(Runtime, "unknown dtype '", name, "' in a job or plan");
}

plan::AttrValue attr_to_proto(const AttrValue& v) {
  plan::AttrValue p;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) p.set_b(x);
        else if constexpr (std::is_same_v<T, int64_t>) p.set_i(x);
        else if constexpr (std::is_same_v<T, double>) p.set_f(x);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          plan::AttrValue::IntList* list = p.mutable_ints();  // set even when empty: [] is not None
          for (int64_t e : x) list->add_v(e);
        } else if constexpr (std::is_same_v<T, DType>) p.set_dtype(std::string(dtype_name(x)));
        else if constexpr (std::is_same_v<T, std::string>) p.set_s(x);
        else p.set_none(true);
      },
      v);
  return p;
}

AttrValue attr_from_proto(const plan::AttrValue& p) {
  switch (p.value_case()) {
    case plan::AttrValue::kB: return p.b();
    case plan::AttrValue::kI: return p.i();
    case plan::AttrValue::kF: return p.f();
    case plan::AttrValue::kInts: return std::vector<int64_t>(p.ints().v().begin(), p.ints().v().end());
    case plan::AttrValue::kDtype: return dtype_from_name(p.dtype());
    case plan::AttrValue::kS: return p.s();
    default: return std::monostate{};
  }
}

}  // namespace

void attrs_to_proto(const OpSchema& op, const Attrs& attrs, AttrMap* out) {
  RILL_ASSERT(attrs.size() == op.attr_names.size(), "[", op.name, "] ", attrs.size(), " attrs for ",
              op.attr_names.size(), " names");
  for (size_t i = 0; i < attrs.size(); ++i) (*out)[op.attr_names[i]] = attr_to_proto(attrs.values[i]);
}

AttrsSym attrs_from_proto(const OpSchema& op, const AttrMap& attrs) {
  std::vector<AttrValue> values;
  values.reserve(op.attr_names.size());
  for (const std::string& name : op.attr_names) {
    auto it = attrs.find(name);
    RILL_CHECK(it != attrs.end(), Runtime, "[", op.name, "] the op conf has no attr '", name, "'");
    values.push_back(attr_from_proto(it->second));
  }
  return make_attrs(std::move(values));
}

plan::ScalarValue scalar_to_proto(Scalar s) {
  plan::ScalarValue p;
  switch (s.kind()) {
    case Scalar::Kind::kBool: p.set_b(s.to<bool>()); break;
    case Scalar::Kind::kInt: p.set_i(s.to_int()); break;
    case Scalar::Kind::kFloat: p.set_f(s.to_double()); break;
    case Scalar::Kind::kNone: break;  // no value set: None
  }
  return p;
}

Scalar scalar_from_proto(const plan::ScalarValue& p) {
  switch (p.value_case()) {
    case plan::ScalarValue::kB: return Scalar(p.b());
    case plan::ScalarValue::kF: return Scalar(p.f());
    case plan::ScalarValue::kI: return Scalar(p.i());
    default: return Scalar::none();
  }
}

plan::TensorDesc desc_to_proto(const TensorMeta& meta, int64_t offset) {
  plan::TensorDesc d;
  for (int64_t s : meta.shape) d.add_shape(s);
  for (int64_t s : meta.strides) d.add_strides(s);
  d.set_dtype(std::string(dtype_name(meta.dtype)));
  d.set_offset(offset);
  return d;
}

MetaSym meta_from_proto(const plan::TensorDesc& d) {
  Shape shape(d.shape().begin(), d.shape().end());
  Strides strides(d.strides().begin(), d.strides().end());
  return make_meta(shape, strides, dtype_from_name(d.dtype()));
}

std::string attr_str(const plan::AttrValue& p) {
  std::ostringstream os;
  switch (p.value_case()) {
    case plan::AttrValue::kB: os << (p.b() ? "True" : "False"); break;
    case plan::AttrValue::kI: os << p.i(); break;
    case plan::AttrValue::kF: os << p.f(); break;
    case plan::AttrValue::kInts: {
      os << "[";
      for (int i = 0; i < p.ints().v_size(); ++i) os << (i ? ", " : "") << p.ints().v(i);
      os << "]";
      break;
    }
    case plan::AttrValue::kDtype: os << p.dtype(); break;
    case plan::AttrValue::kS: os << "'" << p.s() << "'"; break;
    default: os << "None";
  }
  return os.str();
}

}  // namespace rill::graph
