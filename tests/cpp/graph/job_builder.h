// A small builder of jobs for the graph tests: op confs as the tracer writes them (names, lbns "name/out<k>",
// attrs by signature name, scope), without tracing anything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rill/graph/job.pb.h"

namespace rill::graph::testing {

inline plan::AttrValue I(int64_t v) {
  plan::AttrValue a;
  a.set_i(v);
  return a;
}
inline plan::AttrValue F(double v) {
  plan::AttrValue a;
  a.set_f(v);
  return a;
}
inline plan::AttrValue B(bool v) {
  plan::AttrValue a;
  a.set_b(v);
  return a;
}
inline plan::AttrValue S(const std::string& v) {
  plan::AttrValue a;
  a.set_s(v);
  return a;
}
inline plan::AttrValue Dt(const std::string& v) {
  plan::AttrValue a;
  a.set_dtype(v);
  return a;
}
inline plan::AttrValue Ints(std::vector<int64_t> v) {
  plan::AttrValue a;
  a.mutable_ints();  // set even when empty
  for (int64_t x : v) a.mutable_ints()->add_v(x);
  return a;
}
inline plan::ScalarValue Sf(double v) {
  plan::ScalarValue s;
  s.set_f(v);
  return s;
}
inline plan::ScalarValue Si(int64_t v) {
  plan::ScalarValue s;
  s.set_i(v);
  return s;
}

using Attrs = std::vector<std::pair<std::string, plan::AttrValue>>;

class JobBuilder {
 public:
  explicit JobBuilder(const std::string& name = "TestGraph", int gradient_accumulation_steps = 1) {
    job.mutable_conf()->set_name(name);
    job.mutable_conf()->set_gradient_accumulation_steps(gradient_accumulation_steps);
  }

  /** An op with `outputs` outputs; returns its op conf. */
  OpConf& add(const std::string& name, const std::string& type, std::vector<std::string> inputs,
              const Attrs& attrs = {}, std::vector<plan::ScalarValue> scalars = {},
              const std::string& scope = "forward", int outputs = 1) {
    OpConf& op = *job.add_ops();
    op.set_name(name);
    op.set_op_type(type);
    for (auto& in : inputs) op.add_inputs(in);
    for (const auto& [k, v] : attrs) (*op.mutable_attrs())[k] = v;
    for (const auto& s : scalars) *op.add_scalars() = s;
    for (int k = 0; k < outputs; ++k) op.add_outputs(name + "/out" + std::to_string(k));
    op.set_scope(scope);
    op.set_loc("model.py:" + std::to_string(job.ops_size()));
    return op;
  }
  /** A one-output op; returns its lbn. */
  std::string op(const std::string& name, const std::string& type, std::vector<std::string> inputs,
                 const Attrs& attrs = {}, std::vector<plan::ScalarValue> scalars = {},
                 const std::string& scope = "forward") {
    return add(name, type, std::move(inputs), attrs, std::move(scalars), scope).outputs(0);
  }
  std::string variable(const std::string& name, std::vector<int64_t> shape, bool trainable = true) {
    return op(name, "variable", {},
              {{"index", I(variables_++)}, {"shape", Ints(shape)}, {"dtype", S("float32")},
               {"trainable", B(trainable)}},
              {}, "");
  }
  std::string input(const std::string& name, std::vector<int64_t> shape, const std::string& dtype = "float32") {
    return op(name, "input", {}, {{"index", I(inputs_++)}, {"shape", Ints(shape)}, {"dtype", S(dtype)}}, {}, "");
  }
  void output(const std::string& name, const std::string& lbn) {
    add(name, "output", {lbn}, {{"index", I(outputs_++)}}, {}, "", 0);
  }
  void assign(const std::string& name, const std::string& var, const std::string& value,
              const std::string& scope = "optimizer") {
    add(name, "assign", {var, value}, {}, {}, scope, 0);
  }

  Job job;

 private:
  int64_t variables_ = 0, inputs_ = 0, outputs_ = 0;
};

/** The op called name in job, or null. */
inline const OpConf* find_op(const Job& job, const std::string& name) {
  for (const OpConf& op : job.ops())
    if (op.name() == name) return &op;
  return nullptr;
}

/** How many ops of job have op_type type. */
inline int count_ops(const Job& job, const std::string& type) {
  int n = 0;
  for (const OpConf& op : job.ops()) n += op.op_type() == type;
  return n;
}

}  // namespace rill::graph::testing
