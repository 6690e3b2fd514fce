// CPU kernels of the optimizer update ops (ops/optim.cpp): _sgd_update, _adam_update, _rmsprop_update.
//
// Note [Fused updates round like the eager optimizer]
// Each element is computed in the parameter's dtype with the operations of rill's eager optimizer
// (python/rill/optim/{sgd,adam,rmsprop}.py), in their order, each rounded as the eager op rounds it: a
// Python number multiplies or adds after conversion to that dtype (alpha=, mul_(momentum), add_(eps)),
// and the per-step numbers (1 - beta ** step, lr / bias_correction1, 1 - lr * weight_decay, 1 - alpha)
// are computed in double first, as Python computes them. The fused and the eager update then agree to
// the last bit. A compiler contracting a * b + c into one fused multiply-add would round once instead of
// twice, so contraction is switched off for this file (it is off anyway where the build targets a CPU
// without FMA).
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string_view>
#include <vector>

#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace rill::cpu {
namespace {

// A 0-d floating-point tensor's value, in double.
double read_scalar(const TensorArg& t, const char* op) {
  return visit_floating_dtype(t.meta->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<OpMath<T>>(*t.ptr<T>()));
  });
}

// Writes v into a 0-d floating-point tensor (rounded to its dtype).
void write_scalar(const TensorArg& t, double v, const char* op) {
  visit_floating_dtype(t.meta->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.ptr<T>() = T(static_cast<OpMath<T>>(v));
  });
}

// The most state tensors an update op has (Adam with amsgrad, RMSprop centered with momentum).
constexpr size_t kMaxStates = 3;

// Runs update(p, g, state) on every element: inputs (param, grad, S states, step, lr), outputs (param,
// S states, step). update gets the element's parameter and gradient, updates the S state values in
// place and returns the new parameter. Inputs may have any strides; outputs are dense.
template <typename T, size_t S, typename Update>
  requires(S <= kMaxStates)
void update_elements(const KernelContext& c, const Update& update) {
  constexpr size_t N = 3 + 2 * S;  // outputs param + S states, then inputs param, grad, S states
  std::array<const TensorArg*, N> operands;
  for (size_t k = 0; k <= S; ++k) operands[k] = &c.outputs[k];
  for (size_t k = 0; k < S + 2; ++k) operands[S + 1 + k] = &c.inputs[k];
  ElementwisePlan<N> plan(c.outputs[0].meta->shape, operands);
  plan.run([&](const std::array<char*, N>& base, const std::array<int64_t, N>& strides, int64_t n) {
    std::array<char*, N> q = base;
    for (int64_t i = 0; i < n; ++i) {
      std::array<T, kMaxStates> state{};  // every op's slots, so no update reads past the array
      for (size_t j = 0; j < S; ++j) state[j] = *reinterpret_cast<const T*>(q[S + 3 + j]);
      const T p = update(*reinterpret_cast<const T*>(q[S + 1]), *reinterpret_cast<const T*>(q[S + 2]), state.data());
      *reinterpret_cast<T*>(q[0]) = p;
      for (size_t j = 0; j < S; ++j) *reinterpret_cast<T*>(q[1 + j]) = state[j];
      for (size_t k = 0; k < N; ++k) q[k] += strides[k];
    }
  });
}

// update_elements with S the number of state inputs of this call (0 to 3).
template <typename T, typename Update>
void dispatch_states(const KernelContext& c, const Update& update) {
  switch (c.inputs.size() - 4) {
    case 0: return update_elements<T, 0>(c, update);
    case 1: return update_elements<T, 1>(c, update);
    case 2: return update_elements<T, 2>(c, update);
    case 3: return update_elements<T, 3>(c, update);
    default: RILL_FAIL(Runtime, "[", c.op.name, "] internal error: ", c.inputs.size() - 4, " state inputs");
  }
}

// Calls f(TypeTag<T>{}) for a float32 or float64 parameter (inference admits no other).
template <typename F>
void visit_param_dtype(const KernelContext& c, const F& f) {
  const DType t = c.inputs[0].meta->dtype;
  RILL_CHECK(t == DType::kFloat32 || t == DType::kFloat64, Type, "[", c.op.name,
             "] supports float32 and float64 parameters, got ", dtype_name(t));
  if (t == DType::kFloat32) f(TypeTag<float>{});
  else f(TypeTag<double>{});
}

// start.lerp_(end, weight) as the eager optimizers write it (adam.py's _lerp_): two formulas, chosen by
// whether weight is below 0.5, with 1 - weight computed in double.
template <typename T>
struct Lerp {
  bool low;
  T w;
  explicit Lerp(double weight) : low(weight < 0.5), w(static_cast<T>(low ? weight : 1 - weight)) {}
  T operator()(T start, T end) const { return low ? start + (end - start) * w : end - (end - start) * w; }
};

// torch.maximum: NaN when either is NaN.
template <typename T>
T maximum(T a, T b) {
  if (a != a || b != b) return a != a ? a : b;
  return a > b ? a : b;
}

// Whether every tensor of a float32 update is dense: the vector rows of isa_rows.h then run it (the same
// operations, rounded the same way, a vector of elements at a time).
bool dense_float32(const KernelContext& c) {
  if (c.inputs[0].meta->dtype != DType::kFloat32) return false;
  for (size_t k = 0; k + 2 < c.inputs.size(); ++k)
    if (!c.inputs[k].meta->contiguous) return false;
  for (size_t k = 0; k + 1 < c.outputs.size(); ++k)
    if (!c.outputs[k].meta->contiguous) return false;
  return true;
}

// f(begin, end) over the parameter's elements, split over the intra-op threads.
template <typename F>
void over_rows(const KernelContext& c, const F& f) {
  parallel::parallel_for(0, c.inputs[0].meta->numel, kParallelGrain, f);
}

// sgd.py: weight decay, momentum (buf = grad on the first step), nesterov, p -= lr * grad.
void fused_sgd_kernel(const KernelContext& c) {
  const double lr = read_scalar(c.inputs.back(), "_sgd_update");
  const double step = read_scalar(c.inputs[c.inputs.size() - 2], "_sgd_update");
  const double momentum = c.attr<double>("momentum"), dampening = c.attr<double>("dampening");
  const double weight_decay = c.attr<double>("weight_decay");
  const bool nesterov = c.attr<bool>("nesterov"), maximize = c.attr<bool>("maximize");
  const bool first = step == 0;
  if (dense_float32(c)) {
    const SgdRowArgs a{static_cast<float>(weight_decay), static_cast<float>(momentum),
                       static_cast<float>(1 - dampening), static_cast<float>(-lr), maximize, weight_decay != 0,
                       momentum != 0, nesterov, first};
    const RowKernels& rows = row_kernels();
    const float* buf = momentum != 0 ? c.inputs[2].ptr<float>() : nullptr;
    float* buf_out = momentum != 0 ? c.outputs[1].ptr<float>() : nullptr;
    over_rows(c, [&](int64_t b, int64_t e) {
      rows.sgd(c.outputs[0].ptr<float>() + b, buf_out ? buf_out + b : nullptr, c.inputs[0].ptr<float>() + b,
               c.inputs[1].ptr<float>() + b, buf ? buf + b : nullptr, e - b, a);
    });
    write_scalar(c.outputs.back(), step + 1, "_sgd_update");
    return;
  }
  visit_param_dtype(c, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T wd = static_cast<T>(weight_decay), mom = static_cast<T>(momentum);
    const T keep = static_cast<T>(1 - dampening), neg_lr = static_cast<T>(-lr);
    dispatch_states<T>(c, [&](T p, T g, T* state) {
      if (maximize) g = -g;
      if (weight_decay != 0) g = g + p * wd;
      if (momentum != 0) {
        T& buf = state[0];
        buf = first ? g : buf * mom + g * keep;
        g = nesterov ? g + buf * mom : buf;
      }
      return p + g * neg_lr;
    });
  });
  write_scalar(c.outputs.back(), step + 1, "_sgd_update");
}

// adam.py: coupled or decoupled weight decay, the moments, amsgrad's running maximum, bias corrections.
void fused_adam_kernel(const KernelContext& c) {
  const double lr = read_scalar(c.inputs.back(), "_adam_update");
  const double step = read_scalar(c.inputs[c.inputs.size() - 2], "_adam_update") + 1;
  const double beta1 = c.attr<double>("beta1"), beta2 = c.attr<double>("beta2"), eps = c.attr<double>("eps");
  const double weight_decay = c.attr<double>("weight_decay");
  const bool amsgrad = c.attr<bool>("amsgrad"), maximize = c.attr<bool>("maximize");
  const bool decoupled = c.attr<bool>("decoupled_weight_decay");
  const double step_size = lr / (1 - std::pow(beta1, step));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, step));
  if (!amsgrad && dense_float32(c)) {
    const Lerp<float> lerp(1 - beta1);
    const AdamRowArgs a{static_cast<float>(1 - lr * weight_decay), static_cast<float>(weight_decay),
                        static_cast<float>(beta2), static_cast<float>(1 - beta2),
                        static_cast<float>(bias_correction2_sqrt), static_cast<float>(eps),
                        static_cast<float>(-step_size), lerp.w, lerp.low, maximize, weight_decay != 0, decoupled};
    const RowKernels& rows = row_kernels();
    over_rows(c, [&](int64_t b, int64_t e) {
      rows.adam(c.outputs[0].ptr<float>() + b, c.outputs[1].ptr<float>() + b, c.outputs[2].ptr<float>() + b,
                c.inputs[0].ptr<float>() + b, c.inputs[1].ptr<float>() + b, c.inputs[2].ptr<float>() + b,
                c.inputs[3].ptr<float>() + b, e - b, a);
    });
    write_scalar(c.outputs.back(), step, "_adam_update");
    return;
  }
  visit_param_dtype(c, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T decay = static_cast<T>(1 - lr * weight_decay), wd = static_cast<T>(weight_decay);
    const T b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1 - beta2);
    const T bc2 = static_cast<T>(bias_correction2_sqrt), e = static_cast<T>(eps);
    const T neg_step_size = static_cast<T>(-step_size);
    const Lerp<T> lerp(1 - beta1);
    dispatch_states<T>(c, [&](T p, T g, T* state) {
      if (maximize) g = -g;
      if (weight_decay != 0) {
        if (decoupled) p = p * decay;
        else g = g + p * wd;
      }
      T& exp_avg = state[0];
      T& exp_avg_sq = state[1];
      exp_avg = lerp(exp_avg, g);
      exp_avg_sq = exp_avg_sq * b2 + g * one_minus_b2 * g;
      T second = exp_avg_sq;
      if (amsgrad) {
        state[2] = maximum(state[2], exp_avg_sq);
        second = state[2];
      }
      const T denom = std::sqrt(second) / bc2 + e;
      return p + exp_avg / denom * neg_step_size;
    });
  });
  write_scalar(c.outputs.back(), step, "_adam_update");
}

// rmsprop.py: weight decay, the square average, centering, momentum.
void fused_rmsprop_kernel(const KernelContext& c) {
  const double lr = read_scalar(c.inputs.back(), "_rmsprop_update");
  const double step = read_scalar(c.inputs[c.inputs.size() - 2], "_rmsprop_update");
  const double alpha = c.attr<double>("alpha"), eps = c.attr<double>("eps");
  const double weight_decay = c.attr<double>("weight_decay"), momentum = c.attr<double>("momentum");
  const bool centered = c.attr<bool>("centered"), maximize = c.attr<bool>("maximize");
  const size_t buf_index = 1, grad_avg_index = momentum > 0 ? 2 : 1;
  visit_param_dtype(c, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T wd = static_cast<T>(weight_decay), a = static_cast<T>(alpha), one_minus_a = static_cast<T>(1 - alpha);
    const T e = static_cast<T>(eps), mom = static_cast<T>(momentum), neg_lr = static_cast<T>(-lr);
    const Lerp<T> lerp(1 - alpha);
    dispatch_states<T>(c, [&](T p, T g, T* state) {
      if (maximize) g = -g;
      if (weight_decay != 0) g = g + p * wd;
      T& square_avg = state[0];
      square_avg = square_avg * a + g * one_minus_a * g;
      T avg;
      if (centered) {
        T& grad_avg = state[grad_avg_index];
        grad_avg = lerp(grad_avg, g);
        avg = std::sqrt(square_avg - grad_avg * grad_avg);
      } else {
        avg = std::sqrt(square_avg);
      }
      avg = avg + e;
      if (momentum > 0) {
        T& buf = state[buf_index];
        buf = buf * mom + g / avg;
        return p + buf * neg_lr;
      }
      return p + g / avg * neg_lr;
    });
  });
  write_scalar(c.outputs.back(), step + 1, "_rmsprop_update");
}

// _multi_<name>: kUpdate on each member in turn, with the member's tensors and the shared lr (ops/optim.cpp's
// layout). The attrs are the single update's, in its order.
template <KernelFn kUpdate>
void multi_update_kernel(const KernelContext& c) {
  const size_t outs = c.outputs.size(), ins = c.inputs.size();
  const size_t members = (ins - outs - 1);  // each member has one input more (grad) than outputs
  RILL_ASSERT(members > 0 && outs % members == 0, "[", c.op.name, "] ", ins, " inputs for ", outs, " outputs");
  const size_t per_out = outs / members, per_in = per_out + 1;
  static const OpSchema& single = ops::get(std::string_view(c.op.name).substr(std::string_view("_multi").size()));
  std::array<TensorArg, 8> member;  // param, grad, at most three states, step; then the lr
  RILL_ASSERT(per_in + 1 <= member.size(), "[", c.op.name, "] ", per_in, " tensors per member");
  member[per_in] = c.inputs.back();
  for (size_t j = 0; j < members; ++j) {
    std::copy(c.inputs.begin() + static_cast<std::ptrdiff_t>(j * per_in),
              c.inputs.begin() + static_cast<std::ptrdiff_t>((j + 1) * per_in), member.begin());
    kUpdate(KernelContext{single, std::span<const TensorArg>(member.data(), per_in + 1),
                          c.outputs.subspan(j * per_out, per_out), c.attrs, c.scalars});
  }
}

}  // namespace

void register_optim_kernels() {
  ops::set_cpu_kernel("_sgd_update", fused_sgd_kernel);
  ops::set_cpu_kernel("_adam_update", fused_adam_kernel);
  ops::set_cpu_kernel("_rmsprop_update", fused_rmsprop_kernel);
  ops::set_cpu_kernel("_multi_sgd_update", multi_update_kernel<fused_sgd_kernel>);
  ops::set_cpu_kernel("_multi_adam_update", multi_update_kernel<fused_adam_kernel>);
  ops::set_cpu_kernel("_multi_rmsprop_update", multi_update_kernel<fused_rmsprop_kernel>);
}

}  // namespace rill::cpu
