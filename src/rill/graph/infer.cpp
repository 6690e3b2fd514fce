#include "rill/graph/infer.h"

#include <bit>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/attrs.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"
#include "rill/util/symbol.h"

namespace rill::graph {

// Note [The inference cache]
// Logical inference gives every op conf its output descs from its input descs.
// Its key for one op node is:
//   - the op conf stripped of what does not change the result: its name, input
//     and output lbns, ctrl inputs, loc, scope and output descs; scalar values
//     become zeros of their kinds (op schemas infer from scalar kinds only, Note
//     [Inference cache] in ops/registry.cpp), and a graph-only op keeps only the
//     attrs it infers from (so "index" and "trainable" do not split variables).
//     It is hashed and compared where it lies in the job, field by field (attrs
//     in any order), never copied or serialized: an entry keeps the stripped conf
//     it was made for, and a lookup compares the op against it;
//   - the input descs, each an interned meta (MetaSym) and an offset;
//   - the job conf without pass_order (a record of what ran, read by no op), interned.
// Ops of 48 identical blocks differ only in names, so each distinct op of a block
// is inferred once and the other 47 hit. The cache lives as long as the process
// (entries are small and a program builds few distinct op nodes) and is shared
// by threads under one mutex, taken once per op.

namespace {

/** Serialized bytes of a message, for interning. */
struct Bytes {
  std::string s;
  bool operator==(const Bytes& o) const { return s == o.s; }
  size_t hash() const { return std::hash<std::string>()(s); }
};
using BytesSym = Symbol<Bytes>;

BytesSym intern_message(const google::protobuf::MessageLite& m) { return BytesSym::intern({deterministic_bytes(m)}); }

struct CacheKey {
  const Bytes* job_conf = nullptr;
  std::vector<std::pair<const TensorMeta*, int64_t>> inputs;
  bool operator==(const CacheKey&) const = default;
};
struct Entry {
  OpConf conf;  // stripped (Note [The inference cache])
  CacheKey key;
  std::vector<plan::TensorDesc> descs;
};
struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<Entry>> entries;  // by the hash of the stripped conf and the key
  int64_t size = 0;
};
// Leaked on purpose, like the symbol tables it points into.
Cache& cache() {
  static Cache* c = [] {
    auto* fresh = new Cache();
    fork::guard_mutex(&fresh->mutex);
    return fresh;
  }();
  return *c;
}

// The attrs a graph-only op infers from (Note [The inference cache]).
std::vector<std::string> inferred_attrs(const std::string& op_type) {
  if (op_type == kVariable) return {"shape", "dtype"};
  if (op_type == kInput) return {"shape", "dtype", "pieces"};
  if (op_type == kTick) return {"kind"};
  if (op_type == kRepeat || op_type == kAcc) return {"repeat"};
  return {};
}

size_t attr_hash(const plan::AttrValue& v) {
  size_t h = static_cast<size_t>(v.value_case());
  switch (v.value_case()) {
    case plan::AttrValue::kB: hash_combine(h, v.b()); break;
    case plan::AttrValue::kI: hash_combine(h, std::hash<int64_t>()(v.i())); break;
    case plan::AttrValue::kF: hash_combine(h, std::hash<uint64_t>()(std::bit_cast<uint64_t>(v.f()))); break;
    case plan::AttrValue::kInts:
      for (int64_t i : v.ints().v()) hash_combine(h, std::hash<int64_t>()(i));
      break;
    case plan::AttrValue::kDtype: hash_combine(h, std::hash<std::string>()(v.dtype())); break;
    case plan::AttrValue::kS: hash_combine(h, std::hash<std::string>()(v.s())); break;
    default: break;  // none: the case says it all
  }
  return h;
}

bool same_attr(const plan::AttrValue& a, const plan::AttrValue& b) {
  if (a.value_case() != b.value_case()) return false;
  switch (a.value_case()) {
    case plan::AttrValue::kB: return a.b() == b.b();
    case plan::AttrValue::kI: return a.i() == b.i();
    case plan::AttrValue::kF: return std::bit_cast<uint64_t>(a.f()) == std::bit_cast<uint64_t>(b.f());
    case plan::AttrValue::kInts:
      return std::equal(a.ints().v().begin(), a.ints().v().end(), b.ints().v().begin(), b.ints().v().end());
    case plan::AttrValue::kDtype: return a.dtype() == b.dtype();
    case plan::AttrValue::kS: return a.s() == b.s();
    default: return true;
  }
}

// Calls f(name, value) for each attr of op that inference reads (all of a schema op's).
template <typename F>
void for_inferred_attrs(const OpConf& op, F&& f) {
  if (!is_graph_only(op.op_type())) {
    for (const auto& [name, value] : op.attrs()) f(name, value);
    return;
  }
  for (const std::string& name : inferred_attrs(op.op_type()))
    if (auto it = op.attrs().find(name); it != op.attrs().end()) f(name, it->second);
}

OpConf stripped(const OpConf& op) {
  OpConf s;
  s.set_op_type(op.op_type());
  for_inferred_attrs(op, [&](const std::string& name, const plan::AttrValue& v) { (*s.mutable_attrs())[name] = v; });
  for (const plan::ScalarValue& v : op.scalars()) {
    plan::ScalarValue* kind = s.add_scalars();
    if (v.value_case() == plan::ScalarValue::kB) kind->set_b(false);
    else if (v.value_case() == plan::ScalarValue::kF) kind->set_f(0);
    else if (v.value_case() == plan::ScalarValue::kI) kind->set_i(0);
  }
  return s;
}

// The hash of stripped(op), read from op in place: attrs summed, so in any order.
size_t stripped_hash(const OpConf& op) {
  size_t h = std::hash<std::string>()(op.op_type()), attrs = 0;
  for_inferred_attrs(op, [&](const std::string& name, const plan::AttrValue& v) {
    size_t a = std::hash<std::string>()(name);
    hash_combine(a, attr_hash(v));
    attrs += a;
  });
  hash_combine(h, attrs);
  for (const plan::ScalarValue& v : op.scalars()) hash_combine(h, static_cast<size_t>(v.value_case()));
  return h;
}

// Whether stripped(op) equals s (itself stripped).
bool same_stripped(const OpConf& op, const OpConf& s) {
  if (op.op_type() != s.op_type() || op.scalars_size() != s.scalars_size()) return false;
  for (int k = 0; k < op.scalars_size(); ++k)
    if (op.scalars(k).value_case() != s.scalars(k).value_case()) return false;
  int kept = 0;
  bool same = true;
  for_inferred_attrs(op, [&](const std::string& name, const plan::AttrValue& v) {
    ++kept;
    auto it = s.attrs().find(name);
    same = same && it != s.attrs().end() && same_attr(v, it->second);
  });
  return same && kept == static_cast<int>(s.attrs().size());
}

plan::TensorDesc contiguous_desc(const Shape& shape, const std::string& dtype) {
  plan::TensorDesc d;
  for (int64_t s : shape) d.add_shape(s);
  for (int64_t s : contiguous_strides(shape)) d.add_strides(s);
  d.set_dtype(dtype);
  graph::meta_from_proto(d);  // raises for an unknown dtype name
  return d;
}

plan::TensorDesc contiguous_like(const plan::TensorDesc& d) {
  return contiguous_desc(Shape(d.shape().begin(), d.shape().end()), d.dtype());
}

void check_inputs(const OpConf& op, int n) {
  RILL_CHECK(op.inputs_size() == n, Runtime, "the ", op.op_type(), " op takes ", n, " input(s), got ",
             op.inputs_size());
}

// variable and input ops: their attrs' shape and dtype; an input of pieces > 1 gives one micro-batch.
plan::TensorDesc infer_binding(const OpConf& op) {
  check_inputs(op, 0);
  auto it = op.attrs().find("shape");
  RILL_CHECK(it != op.attrs().end() && it->second.value_case() == plan::AttrValue::kInts, Runtime, "the ",
             op.op_type(), " op needs an ints attr 'shape'");
  Shape shape(it->second.ints().v().begin(), it->second.ints().v().end());
  for (int64_t s : shape) RILL_CHECK(s >= 0, Runtime, "negative dimension in shape ", shape_str(shape));
  const int64_t pieces = op.op_type() == kInput ? int_attr_or(op, "pieces", 1) : 1;
  RILL_CHECK(pieces >= 1, Runtime, "pieces must be at least 1, got ", pieces);
  if (pieces > 1) {
    RILL_CHECK(!shape.empty() && shape[0] % pieces == 0, Runtime, "an input of shape ", shape_str(shape),
               " cannot be split into ", pieces, " micro-batches along dim 0; make the batch size a multiple of ",
               "gradient_accumulation_steps");
    shape[0] /= pieces;
  }
  return contiguous_desc(shape, str_attr(op, "dtype"));
}

bool same_layout(const plan::TensorDesc& a, const plan::TensorDesc& b) {
  return a.dtype() == b.dtype() &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end());
}

std::vector<plan::TensorDesc> infer_schema_op(const OpSchema& schema, const OpConf& op,
                                              const std::vector<plan::TensorDesc>& inputs,
                                              const std::vector<MetaSym>& metas) {
  RILL_CHECK(schema.num_inputs < 0 || schema.num_inputs == op.inputs_size(), Runtime, "op '", schema.name,
             "' takes ", schema.num_inputs, " inputs, got ", op.inputs_size());
  RILL_CHECK(schema.num_scalars == op.scalars_size(), Runtime, "op '", schema.name, "' takes ",
             schema.num_scalars, " scalars, got ", op.scalars_size());
  std::vector<Scalar> scalars;
  for (const plan::ScalarValue& v : op.scalars()) scalars.push_back(graph::scalar_from_proto(v));
  AttrsSym attrs = graph::attrs_from_proto(schema, op.attrs());
  const InferResult& r = ops::infer_cached(schema, metas, scalars, attrs);
  for (size_t k = 0; k < r.input_dtypes.size() && k < metas.size(); ++k)
    RILL_CHECK(r.input_dtypes[k] == metas[k]->dtype, Runtime, "input ", k, " has dtype ",
               dtype_name(metas[k]->dtype), " but op '", schema.name, "' computes in ",
               dtype_name(r.input_dtypes[k]), "; the job needs a cast op before it");
  std::vector<plan::TensorDesc> out;
  for (const MetaSym& m : r.outputs)
    out.push_back(graph::desc_to_proto(*m, schema.flags.view ? inputs[0].offset() + r.view_offset : 0));
  return out;
}

// The output descs of op from its input descs (metas: the same, interned); raises without naming the op (the
// caller adds the name and loc).
std::vector<plan::TensorDesc> infer_op(const OpConf& op, const std::vector<plan::TensorDesc>& inputs,
                                       const std::vector<MetaSym>& metas) {
  const std::string& t = op.op_type();
  if (t == kVariable || t == kInput) return {infer_binding(op)};
  if (t == kOutput) {
    check_inputs(op, 1);
    return {contiguous_like(inputs[0])};
  }
  if (t == kAssign) {
    check_inputs(op, 2);
    RILL_CHECK(same_layout(inputs[0], inputs[1]), Runtime, "the value ", metas[1]->str(),
               " does not match the variable it is assigned to, ", metas[0]->str());
    return {inputs[0]};
  }
  if (t == kTick) {
    check_inputs(op, 0);
    const std::string kind = str_attr(op, "kind");
    RILL_CHECK(kind == "source" || kind == "sink" || kind == "join", Runtime, "unknown tick kind '", kind,
               "' (source, sink or join)");
    return {};
  }
  if (t == kRepeat || t == kAcc) {
    RILL_CHECK(op.inputs_size() <= 1, Runtime, "the ", t, " op takes one input (or none, for a tick), got ",
               op.inputs_size());
    RILL_CHECK(int_attr(op, "repeat") >= 1, Runtime, "repeat must be at least 1, got ", int_attr(op, "repeat"));
    if (inputs.empty()) return {};
    return {t == kAcc ? contiguous_like(inputs[0]) : inputs[0]};
  }
  return infer_schema_op(*schema_of(op), op, inputs, metas);
}

}  // namespace

void infer_job(Job& job, InferStats& stats) { infer_job(job, OpGraph(job), stats); }

void infer_job(Job& job, const OpGraph& g, InferStats& stats) {
  RILL_ASSERT(&g.job() == &job && g.size() == job.ops_size(), "infer_job with the op graph of another job");
  JobConf conf = job.conf();
  conf.clear_pass_order();
  conf.clear_disabled_passes();  // which passes ran changes the ops, not how one op infers
  const BytesSym job_conf = intern_message(conf);
  Cache& c = cache();
  // Each output's desc interned once, for all its readers; descs are copied only for an op the cache misses.
  std::vector<MetaSym> meta_of_output(g.outputs());
  std::vector<const plan::TensorDesc*> input_descs;
  std::vector<MetaSym> metas;
  CacheKey key;
  key.job_conf = job_conf.get();
  for (int i = 0; i < job.ops_size(); ++i) {
    OpConf& op = *job.mutable_ops(i);
    input_descs.clear();
    metas.clear();
    key.inputs.clear();
    size_t hash = stripped_hash(op);
    hash_combine(hash, std::hash<const void*>()(key.job_conf));
    for (int k = 0; k < op.inputs_size(); ++k) {
      const std::string& lbn = op.inputs(k);
      BlobRef p = g.input_producer(i, k);
      RILL_CHECK(p.op >= 0, Runtime, "[", op.name(), "] reads '", lbn, "', which no op of the job produces",
                 at(op));
      RILL_CHECK(p.op < i, Runtime, "[", op.name(), "] reads '", lbn, "' before its producer ", job.ops(p.op).name(),
                 " (the job's ops must be in topological order)", at(op));
      const OpConf& producer = job.ops(p.op);
      RILL_ASSERT(p.out < producer.output_descs_size(), "[", op.name(), "] no desc for ", lbn);
      const plan::TensorDesc& desc = producer.output_descs(p.out);
      MetaSym& meta = meta_of_output[g.output_number(p)];
      if (!meta) meta = graph::meta_from_proto(desc);
      input_descs.push_back(&desc);
      metas.push_back(meta);
      key.inputs.emplace_back(meta.get(), desc.offset());
      hash_combine(hash, std::hash<const void*>()(meta.get()));
      hash_combine(hash, std::hash<int64_t>()(desc.offset()));
    }
    if (op.op_type() == kAssign)
      RILL_CHECK(g.assign_target(i) >= 0, Runtime, "[", op.name(), "] an assign's first input must be a "
                 "variable op's output, got '", op.inputs_size() ? op.inputs(0) : std::string(), "'", at(op));
    const bool may_omit = op.op_type() == kOutput || op.op_type() == kAssign;
    auto set_descs = [&](const std::vector<plan::TensorDesc>& descs) {
      RILL_CHECK(op.outputs_size() == static_cast<int>(descs.size()) || (may_omit && op.outputs_size() == 0),
                 Runtime, "[", op.name(), "] the op conf lists ", op.outputs_size(), " outputs but op '",
                 op.op_type(), "' has ", descs.size(), at(op));
      op.clear_output_descs();
      for (int k = 0; k < op.outputs_size(); ++k) *op.add_output_descs() = descs[k];
    };
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      const Entry* hit = nullptr;
      if (auto it = c.entries.find(hash); it != c.entries.end())
        for (const Entry& e : it->second)
          if (e.key == key && same_stripped(op, e.conf)) hit = &e;
      if (hit) {
        ++stats.hits;
        set_descs(hit->descs);
        continue;
      }
    }
    std::vector<plan::TensorDesc> descs;
    try {
      std::vector<plan::TensorDesc> inputs;
      for (const plan::TensorDesc* d : input_descs) inputs.push_back(*d);
      descs = infer_op(op, inputs, metas);
    } catch (const Error& e) {
      const std::string prefix = "[" + op.name() + "] ";
      if (std::string_view(e.what()).starts_with(prefix)) throw;  // named already (schema_of)
      throw Error(e.kind(), prefix + e.what() + at(op));
    }
    ++stats.computed;
    set_descs(descs);
    std::lock_guard<std::mutex> lock(c.mutex);
    c.entries[hash].push_back(Entry{stripped(op), key, std::move(descs)});
    ++c.size;
  }
}

int64_t infer_cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size;
}

}  // namespace rill::graph
