// Optimizer update ops: one call updates one parameter and its state with PyTorch's formulas (graph mode's
// optimizer step; python/rill/optim/_fused.py emits them). Out of place, so a graph sees plain dataflow:
//
//   inputs (param, grad, state..., step, lr) -> outputs [param', state'..., step + 1]
//
// The state tensors have the parameter's shape and dtype (float32 or float64); a state an option leaves
// unused (SGD without momentum, Adam without amsgrad, RMSprop without momentum or centering) is passed as
// None and has no output. step and lr are 0-d tensors of any float dtype, read in double by the kernel, so
// a graph can feed the learning rate each step; step counts the updates already done (0: the first).
// The hyper-parameters are attrs:
//   _sgd_update      [momentum, dampening, nesterov, weight_decay, maximize]      state (momentum_buffer?)
//   _adam_update     [beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay]
//                                                        state (exp_avg, exp_avg_sq, max_exp_avg_sq?)
//   _rmsprop_update  [alpha, eps, weight_decay, momentum, centered, maximize]
//                                                        state (square_avg, momentum_buffer?, grad_avg?)
#include <string>

#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// The names of the state inputs a call must give, from its attrs.
std::vector<const char*> state_names(const InferContext& c) {
  const std::string& n = c.op.name;
  if (n == "_sgd_update") {
    if (c.attr<double>("momentum") != 0) return {"momentum_buffer"};
    return {};
  }
  if (n == "_adam_update") {
    if (c.attr<bool>("amsgrad")) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"exp_avg", "exp_avg_sq"};
  }
  std::vector<const char*> names = {"square_avg"};
  if (c.attr<double>("momentum") > 0) names.push_back("momentum_buffer");
  if (c.attr<bool>("centered")) names.push_back("grad_avg");
  return names;
}

InferResult infer_fused_update(const InferContext& c) {
  const std::string& op = c.op.name;
  const std::vector<const char*> names = state_names(c);
  const int64_t states = static_cast<int64_t>(names.size());
  RILL_CHECK(static_cast<int64_t>(c.inputs.size()) == 4 + states, Value, "[", op, "] these options update ",
             states, " state tensor(s), got ", static_cast<int64_t>(c.inputs.size()) - 4,
             "; pass None for the state an option leaves unused (momentum, amsgrad, centered)");
  const TensorMeta& p = *c.inputs[0];
  RILL_CHECK(p.dtype == DType::kFloat32 || p.dtype == DType::kFloat64, Type, "[", op,
             "] supports float32 and float64 parameters, got ", dtype_name(p.dtype),
             "; keep the parameter in float32 (p.float()) to use the fused update");
  for (size_t i = 1; i < c.inputs.size() - 2; ++i) {
    const TensorMeta& t = *c.inputs[i];
    const std::string what = i == 1 ? std::string("grad") : std::string(names[i - 2]);
    RILL_CHECK(t.dtype == p.dtype, Type, "[", op, "] ", what, " is ", dtype_name(t.dtype), " and the parameter is ",
               dtype_name(p.dtype), "; convert it with .to(rill.", dtype_name(p.dtype), ")");
    RILL_CHECK(t.shape == p.shape, Value, "[", op, "] ", what, " has shape ", shape_str(t.shape),
               " and the parameter ", shape_str(p.shape), "; they must match");
    RILL_CHECK(t.device == p.device, Value, "[", op, "] ", what, " is on ", t.device.str(),
               " and the parameter on ", p.device.str());
  }
  for (size_t i = c.inputs.size() - 2; i < c.inputs.size(); ++i) {
    const TensorMeta& t = *c.inputs[i];
    const char* what = i + 2 == c.inputs.size() ? "step" : "lr";
    RILL_CHECK(t.ndim() == 0 && dtype_is_floating(t.dtype), Type, "[", op, "] ", what,
               " must be a 0-d floating-point tensor, got ", t.str());
  }
  std::vector<MetaSym> outputs;
  for (int64_t i = 0; i <= states; ++i) outputs.push_back(make_contiguous_meta(p.shape, p.dtype, p.device));
  const TensorMeta& step = *c.inputs[c.inputs.size() - 2];
  outputs.push_back(make_contiguous_meta({}, step.dtype, step.device));
  return {std::move(outputs), {}};
}

}  // namespace

int ops::updated_input(const OpSchema& op, int output, int num_inputs) {
  if (!op.flags.updates_in_place || output < 0 || num_inputs < 4) return -1;
  const int states = num_inputs - 4;  // inputs (param, grad, states..., step, lr), outputs (param, states..., step)
  if (output == 0) return 0;
  if (output <= states) return output + 1;
  return output == states + 1 ? num_inputs - 2 : -1;
}

void register_optim_ops() {
  const OpFlags k = {.function = true, .differentiable = false, .updates_in_place = true};
  // Each an elementwise update of its parameter and state (0-d step and lr apart): split alike along any axis.
  auto update = [](OpSchema& op) { op.sbp = ops::elementwise_sbp; };
  update(ops::define("_sgd_update(Tensor param, Tensor grad, Tensor? momentum_buffer, Tensor step, Tensor lr, *, "
              "float momentum=0, float dampening=0, bool nesterov=False, float weight_decay=0, "
              "bool maximize=False) -> Tensor[]",
              infer_fused_update, k, "one SGD update: [param, momentum_buffer (with momentum), step + 1]"));
  update(ops::define("_adam_update(Tensor param, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq, Tensor? max_exp_avg_sq, "
              "Tensor step, Tensor lr, *, float beta1=0.9, float beta2=0.999, float eps=1e-8, "
              "float weight_decay=0, bool amsgrad=False, bool maximize=False, bool decoupled_weight_decay=False) "
              "-> Tensor[]",
              infer_fused_update, k,
              "one Adam/AdamW update: [param, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad), step + 1]"));
  update(ops::define("_rmsprop_update(Tensor param, Tensor grad, Tensor square_avg, Tensor? momentum_buffer, "
              "Tensor? grad_avg, Tensor step, Tensor lr, *, float alpha=0.99, float eps=1e-8, "
              "float weight_decay=0, float momentum=0, bool centered=False, bool maximize=False) -> Tensor[]",
              infer_fused_update, k,
              "one RMSprop update: [param, square_avg, momentum_buffer (momentum), grad_avg (centered), step + 1]"));
}

}  // namespace rill
