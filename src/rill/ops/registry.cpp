#include <deque>
#include <mutex>
#include <unordered_map>

#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill::ops {
namespace {

struct Registry {
  std::deque<OpSchema> schemas;  // deque: references stay valid as ops are added
  std::unordered_map<std::string_view, OpSchema*> by_name;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// Note [Inference cache]
// Inference is a pure function of (op, input metas, scalar kinds, attrs, the default float dtype). Metas
// and attrs are interned, so the key is a handful of pointers and hashing it is
// cheap. The cache is per thread: no lock on the hot path, and a thread rarely
// sees metas another thread created. Entries are never evicted: the number of
// distinct (op, metas) pairs a program uses is small.
struct CacheKey {
  const OpSchema* op;
  const Attrs* attrs;
  uint32_t scalar_kinds;
  DType default_float;  // promotion depends on it (rill.set_default_dtype)
  std::vector<const TensorMeta*> inputs;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    size_t h = std::hash<const void*>()(k.op);
    hash_combine(h, std::hash<const void*>()(k.attrs));
    hash_combine(h, k.scalar_kinds);
    hash_combine(h, static_cast<size_t>(k.default_float));
    for (const TensorMeta* m : k.inputs) hash_combine(h, std::hash<const void*>()(m));
    return h;
  }
};
thread_local std::unordered_map<CacheKey, InferResult, CacheKeyHash> t_cache;
thread_local CacheKey t_probe;

bool attr_has_type(const AttrValue& v, ArgType t) {
  switch (t) {
    case ArgType::kInt: return std::holds_alternative<int64_t>(v);
    case ArgType::kIntList: return std::holds_alternative<std::vector<int64_t>>(v);
    case ArgType::kFloat: return std::holds_alternative<double>(v);
    case ArgType::kBool: return std::holds_alternative<bool>(v);
    case ArgType::kScalarType: return std::holds_alternative<DType>(v);
    case ArgType::kStr: return std::holds_alternative<std::string>(v);
    default: return false;
  }
}

// A call's attrs have the signature's types, in its order (Note [Arguments of an op call]); checked once per
// inference-cache entry, so a caller that builds them wrong fails at once, not in a kernel.
void check_attrs(const OpSchema& op, const Attrs& attrs) {
  RILL_ASSERT(attrs.size() == op.attr_names.size(), "[", op.name, "] called with ", attrs.size(), " attrs, its "
              "signature has ", op.attr_names.size(), ": ", op.signature.str());
  size_t i = 0;
  for (const ArgSpec& a : op.signature.args) {
    if (a.is_tensor() || a.type == ArgType::kScalar) continue;
    RILL_ASSERT(attr_has_type(attrs.values[i], a.type) ||
                (a.optional && std::holds_alternative<std::monostate>(attrs.values[i])), "[", op.name, "] attr '", a.name, "' is not a ",
                arg_type_name(a.type), ": ", op.signature.str());
    ++i;
  }
}

}  // namespace

void register_all() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_elementwise_ops();
    register_special_ops();
    register_reduce_ops();
    register_matmul_ops();
    register_creation_ops();
    register_conv_ops();
    register_pool_ops();
    register_shape_ops();
    register_index_ops();
    register_sort_ops();
    register_nn_ops();
    register_view_ops();
    register_comm_ops();
    register_boxing_ops();
    register_optim_ops();
    register_fused_ops();
    register_linalg_ops();
    register_experimental_ops();
  });
}

OpSchema& define(std::string_view signature, InferFn infer, OpFlags flags, std::string_view doc) {
  OpSchema schema;
  schema.signature = parse_signature(signature);
  schema.name = schema.signature.name;
  schema.doc = std::string(doc);
  schema.flags = flags;
  schema.infer = infer;
  // Note [Arguments of an op call]: inputs, scalars and attrs follow from the argument types.
  for (const ArgSpec& a : schema.signature.args) {
    if (a.is_tensor()) {
      if (a.type == ArgType::kTensorList || a.optional) schema.num_inputs = -1;
      else if (schema.num_inputs >= 0) ++schema.num_inputs;
    } else if (a.type == ArgType::kScalar) {
      ++schema.num_scalars;
    } else {
      schema.attr_names.push_back(a.name);
    }
  }
  RILL_ASSERT(!(flags.method || flags.inplace) || (!schema.signature.args.empty() &&
              schema.signature.args[0].type == ArgType::kTensor), "a method's first argument is a Tensor: ",
              schema.name);
  Registry& r = registry();
  RILL_ASSERT(!r.by_name.count(schema.name), "op defined twice: ", schema.name);
  RILL_ASSERT(schema.infer != nullptr, "op without inference: ", schema.name);
  r.schemas.push_back(std::move(schema));
  OpSchema& s = r.schemas.back();
  r.by_name[s.name] = &s;
  return s;
}

const OpSchema* find(std::string_view name) {
  register_all();
  auto& m = registry().by_name;
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

const OpSchema& get(std::string_view name) {
  const OpSchema* s = find(name);
  RILL_CHECK(s != nullptr, Runtime, "[ops] unknown op '", name, "'");
  return *s;
}

std::vector<const OpSchema*> all() {
  register_all();
  std::vector<const OpSchema*> out;
  for (const OpSchema& s : registry().schemas) out.push_back(&s);
  return out;
}

void set_kernel(std::string_view name, DeviceType device, KernelFn fn) {
  auto& m = registry().by_name;
  auto it = m.find(name);
  RILL_ASSERT(it != m.end(), "kernel for an unknown op: ", std::string(name));
  it->second->kernels[static_cast<size_t>(device)] = fn;
}

const InferResult& infer_cached(const OpSchema& op, std::span<const MetaSym> inputs,
                                std::span<const Scalar> scalars, AttrsSym attrs) {
  CacheKey& probe = t_probe;  // reused: no allocation on a cache hit
  probe.op = &op;
  probe.attrs = attrs.get();
  probe.scalar_kinds = 0;
  probe.default_float = default_float();
  for (const Scalar& s : scalars) probe.scalar_kinds = probe.scalar_kinds * 5 + 1 + static_cast<uint32_t>(s.kind());
  probe.inputs.clear();
  for (const MetaSym& m : inputs) probe.inputs.push_back(m.get());
  auto it = t_cache.find(probe);
  if (it != t_cache.end()) {
    // Note [Strict dtype mode] in type_promotion.cpp: a result that converts implicitly was maybe inferred
    // with strict mode off; inferring again under strict mode raises.
    if (it->second.implicit_conversion && strict_dtype()) [[unlikely]]
      op.infer(InferContext{op, inputs, scalars, *attrs});
    return it->second;
  }
  check_attrs(op, *attrs);
  InferContext ctx{op, inputs, scalars, *attrs};
  InferResult result = op.infer(ctx);
  result.implicit_conversion = ctx.implicit_conversion;
  return t_cache.emplace(probe, std::move(result)).first->second;
}

size_t infer_cache_size() { return t_cache.size(); }

}  // namespace rill::ops

namespace rill {

size_t OpSchema::attr_index(std::string_view attr) const {
  for (size_t i = 0; i < attr_names.size(); ++i)
    if (attr_names[i] == attr) return i;
  RILL_ASSERT(false, "[", name, "] has no attr '", std::string(attr), "'");
  return 0;
}

}  // namespace rill
