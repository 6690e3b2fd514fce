#include "rill/ops/fused_activation.h"

#include <unordered_map>
#include <vector>

#include "rill/ops/attrs.h"

namespace rill::ops {
namespace {

// The activation's schema and attrs, made once per (activation, approximate).
struct Activation {
  const OpSchema* op;
  AttrsSym attrs;
};

const Activation& activation_of(const std::string& name, const std::string& approximate) {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, Activation>();  // leaked: used until exit
    for (std::string_view act : kFusedActivations) {
      for (const char* approx : {"none", "tanh"}) {
        std::vector<AttrValue> values;
        if (act == "gelu") values.emplace_back(std::string(approx));
        t->emplace(std::string(act) + "/" + approx, Activation{&get(act), make_attrs(std::move(values))});
      }
    }
    return t;
  }();
  return table->at(name + "/" + approximate);
}

}  // namespace

void check_fused_activation(const InferContext& c) {
  const std::string& act = c.attr<std::string>("activation");
  RILL_CHECK(is_fused_activation(act), Value, "[", c.op.name, "] no fused activation is called '", act,
             "'; the activations are relu, tanh, sigmoid, silu and gelu");
  const std::string& approximate = c.attr<std::string>("approximate");
  RILL_CHECK(approximate == "none" || approximate == "tanh", Value, "[", c.op.name,
             "] approximate must be 'none' or 'tanh' (gelu's), got '", approximate, "'");
  RILL_CHECK(c.inputs[0]->dtype == DType::kFloat32, Type, "[", c.op.name, "] takes float32, got ",
             dtype_name(c.inputs[0]->dtype), "; other dtypes run the producer and the activation as two ops");
}

void activate_in_place(const TensorArg& out, const std::string& activation, const std::string& approximate) {
  const Activation& act = activation_of(activation, approximate);
  act.op->kernel(DeviceType::kCPU)(KernelContext{*act.op, {&out, 1}, {&out, 1}, *act.attrs, {}});
}

}  // namespace rill::ops
