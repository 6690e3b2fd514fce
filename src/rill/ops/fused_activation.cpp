#include "rill/ops/fused_activation.h"

#include <array>
#include <vector>

#include "rill/ops/attrs.h"

namespace rill::ops {
namespace {

// The activation's schema and attrs, made once per (activation, approximate): a call looks them up without
// allocating.
struct Activation {
  const OpSchema* op;
  AttrsSym attrs;
};

const Activation& activation_of(std::string_view name, std::string_view approximate) {
  static const auto* table = [] {
    auto* t = new std::array<std::array<Activation, 2>, kFusedActivations.size()>();  // leaked: used until exit
    for (size_t k = 0; k < kFusedActivations.size(); ++k)
      for (int tanh = 0; tanh < 2; ++tanh) {
        std::vector<AttrValue> values;
        if (kFusedActivations[k] == "gelu") values.emplace_back(std::string(tanh ? "tanh" : "none"));
        (*t)[k][static_cast<size_t>(tanh)] = Activation{&get(kFusedActivations[k]), make_attrs(std::move(values))};
      }
    return t;
  }();
  const size_t k = static_cast<size_t>(
      std::find(kFusedActivations.begin(), kFusedActivations.end(), name) - kFusedActivations.begin());
  RILL_CHECK(k < kFusedActivations.size(), Value, "[fused activation] no activation is called '", name, "'");
  return (*table)[k][approximate == "tanh" ? 1 : 0];
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
