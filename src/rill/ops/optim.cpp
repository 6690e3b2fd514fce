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
//
// Each has a multi-tensor form, _multi_<name> (graph mode's fuse_optimizer pass: one task for a parameter group):
// the same attrs, and the inputs of K updates that share their lr, member by member without it, then the lr:
//
//   tensors [param, grad, state..., step] * K + [lr] -> [param', state'..., step + 1] * K
#include <string>
#include <string_view>

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

// The single update a _multi_<name> op runs per member.
const OpSchema& single_update(const OpSchema& multi) {
  return ops::get(std::string_view(multi.name).substr(std::string_view("_multi").size()));
}

InferResult infer_multi_update(const InferContext& c) {
  const OpSchema& single = single_update(c.op);
  const int64_t per = static_cast<int64_t>(state_names(InferContext{single, c.inputs, c.scalars, c.attrs}).size()) + 3;
  const int64_t n = static_cast<int64_t>(c.inputs.size());
  RILL_CHECK(n >= per + 1 && (n - 1) % per == 0, Value, "[", c.op.name, "] takes ", per,
             " tensors per parameter (param, grad, states, step) and then the lr, got ", n, " tensors");
  InferResult out;
  std::vector<MetaSym> member(static_cast<size_t>(per) + 1);
  member.back() = c.inputs.back();
  for (int64_t j = 0; j + 1 < n; j += per) {
    std::copy(c.inputs.begin() + j, c.inputs.begin() + j + per, member.begin());
    InferResult r = infer_fused_update(InferContext{single, member, c.scalars, c.attrs});
    for (MetaSym& m : r.outputs) out.outputs.push_back(std::move(m));
  }
  return out;
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
  // The multi-tensor forms are made by a pass that runs on a job already lowered to one rank: no SBP, and their
  // in-place writes were arranged for the single updates they replace.
  auto define = [&](const std::string& name, const std::string& inputs, const std::string& attrs, const char* doc) {
    ops::define(name + "(" + inputs + ", *, " + attrs + ") -> Tensor[]", infer_fused_update, k, doc).sbp =
        ops::elementwise_sbp;
    ops::define("_multi" + name + "(Tensor[] tensors, *, " + attrs + ") -> Tensor[]", infer_multi_update,
                {.differentiable = false}, "the updates of parameters that share their lr, in one call");
  };
  define("_sgd_update", "Tensor param, Tensor grad, Tensor? momentum_buffer, Tensor step, Tensor lr",
         "float momentum=0, float dampening=0, bool nesterov=False, float weight_decay=0, bool maximize=False",
         "one SGD update: [param, momentum_buffer (with momentum), step + 1]");
  define("_adam_update",
         "Tensor param, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq, Tensor? max_exp_avg_sq, Tensor step, Tensor lr",
         "float beta1=0.9, float beta2=0.999, float eps=1e-8, float weight_decay=0, bool amsgrad=False, "
         "bool maximize=False, bool decoupled_weight_decay=False",
         "one Adam/AdamW update: [param, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad), step + 1]");
  define("_rmsprop_update",
         "Tensor param, Tensor grad, Tensor square_avg, Tensor? momentum_buffer, Tensor? grad_avg, Tensor step, "
         "Tensor lr",
         "float alpha=0.99, float eps=1e-8, float weight_decay=0, float momentum=0, bool centered=False, "
         "bool maximize=False",
         "one RMSprop update: [param, square_avg, momentum_buffer (momentum), grad_avg (centered), step + 1]");
}

}  // namespace rill
