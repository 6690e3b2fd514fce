// CPU kernels of the activations (ops/elementwise.cpp, kActivationOps) and of their
// backward ops (`<name>_backward(grad, input)`, same number arguments). Each
// activation is one functor over the compute type A (float for 16-bit floats):
// forward(x), backward(g, x), and for dense float32 tensors row / row_backward, which
// hand the tensor to the row kernels built for this CPU (isa_rows.h; Note [Vector
// math] in elementwise.cpp). The formulas are PyTorch's, so values and gradients
// agree at ties (x == 0, x == threshold).
#include <cmath>
#include <type_traits>

#include "rill/kernels/cpu/erf.h"
#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/vector_math.h"
#include "rill/ops/elementwise.h"

namespace rill::cpu {
namespace {

// erf in the compute type: rill's own for float (Note [Vectorised erf]), so every
// float32 layout and the 16-bit floats agree with the rows; libm's for double.
template <typename A>
A gelu_erf(A x) {
  if constexpr (std::is_same_v<A, float>) return erf_float(x);
  else return std::erf(x);
}

// gelu(x) = x * Phi(x), exact (erf) or with PyTorch's tanh approximation.
template <typename A>
struct Gelu {
  static constexpr bool kIntegers = false;
  bool tanh_form;
  explicit Gelu(const KernelContext& c) : tanh_form(c.attrs.get_string(0) == "tanh") {}
  static constexpr A kBeta = A(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
  static constexpr A kKappa = A(0.044715);
  A forward(A x) const {
    if (tanh_form) return A(0.5) * x * (A(1) + std::tanh(kBeta * (x + kKappa * x * x * x)));
    return x * A(0.5) * (A(1) + gelu_erf(x * A(M_SQRT1_2)));
  }
  A backward(A g, A x) const {
    if (tanh_form) {
      A x_sq = x * x;
      A t = std::tanh(kBeta * (x + kKappa * x_sq * x));
      A left = A(0.5) * x, right = A(1) + t;
      A right_derivative = left * (A(1) - t * t) * kBeta * (A(1) + A(3) * kKappa * x_sq);
      return g * (A(0.5) * right + right_derivative);
    }
    A cdf = A(0.5) * (A(1) + gelu_erf(x * A(M_SQRT1_2)));
    A pdf = A(M_2_SQRTPI * M_SQRT1_2 * 0.5) * std::exp(x * x * A(-0.5));
    return g * (cdf + x * pdf);
  }
  void row(float* y, const float* x, int64_t n) const { row_kernels().gelu(y, x, n, tanh_form); }
  void row_backward(float* y, const float* g, const float* x, int64_t n) const {
    row_kernels().gelu_backward(y, g, x, n, tanh_form);
  }
};

// silu(x) = x * sigmoid(x).
template <typename A>
struct Silu {
  static constexpr bool kIntegers = false;
  explicit Silu(const KernelContext&) {}
  A forward(A x) const { return x / (A(1) + std::exp(-x)); }
  A backward(A g, A x) const {
    A s = A(1) / (A(1) + std::exp(-x));
    return g * s * (A(1) + x * (A(1) - s));
  }
  void row(float* y, const float* x, int64_t n) const { row_kernels().silu(y, x, n); }
  void row_backward(float* y, const float* g, const float* x, int64_t n) const {
    row_kernels().silu_backward(y, g, x, n);
  }
};

// softplus(x) = log(1 + exp(beta x)) / beta, or x where beta x > threshold.
template <typename A>
struct Softplus {
  static constexpr bool kIntegers = false;
  A beta, threshold;
  explicit Softplus(const KernelContext& c) : beta(c.scalars[0].to<A>()), threshold(c.scalars[1].to<A>()) {}
  A forward(A x) const { return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta; }
  A backward(A g, A x) const {
    A z = std::exp(x * beta);
    return x * beta > threshold ? g : g * z / (z + A(1));
  }
  void row(float* y, const float* x, int64_t n) const { row_kernels().softplus(y, x, n, beta, threshold); }
  void row_backward(float* y, const float* g, const float* x, int64_t n) const {
    row_kernels().softplus_backward(y, g, x, n, beta, threshold);
  }
};

template <typename A>
struct LeakyRelu {
  static constexpr bool kIntegers = false;
  A slope;
  explicit LeakyRelu(const KernelContext& c) : slope(c.scalars[0].to<A>()) {}
  A forward(A x) const { return x > A(0) ? x : x * slope; }
  A backward(A g, A x) const { return x > A(0) ? g : g * slope; }
};

// elu(x) = x for x > 0, alpha (exp(x) - 1) otherwise.
template <typename A>
struct Elu {
  static constexpr bool kIntegers = false;
  A alpha;
  explicit Elu(const KernelContext& c) : alpha(c.scalars[0].to<A>()) {}
  A forward(A x) const { return x <= A(0) ? std::expm1(x) * alpha : x; }
  A backward(A g, A x) const { return x <= A(0) ? g * alpha * std::exp(x) : g; }
  void row(float* y, const float* x, int64_t n) const { row_kernels().elu(y, x, n, alpha); }
};

// hardtanh(x) = clamp(x, min_val, max_val); the gradient is zero at and beyond the bounds.
template <typename A>
struct Hardtanh {
  static constexpr bool kIntegers = true;
  A lo, hi;
  explicit Hardtanh(const KernelContext& c) : lo(c.scalars[0].to<A>()), hi(c.scalars[1].to<A>()) {}
  A forward(A x) const { return x < lo ? lo : (hi < x ? hi : x); }
  A backward(A g, A x) const { return (x <= lo || x >= hi) ? A(0) : g; }
};

// hardshrink(x) = x where |x| > lambd, else 0 (its gradient rule is composed of other ops).
template <typename A>
struct Hardshrink {
  static constexpr bool kIntegers = false;
  A lambd;
  explicit Hardshrink(const KernelContext& c) : lambd(c.scalars[0].to<A>()) {}
  A forward(A x) const { return (x > lambd || x < -lambd) ? x : A(0); }
};

template <template <typename> class F>
void forward_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> || (!kIsFloating<T> && !F<OpMath<T>>::kIntegers)) {
      RILL_FAIL(NotImplemented, "[", c.op.name, "] is not implemented for ", dtype_name(kDTypeOf<T>), " tensors");
    } else {
      using A = OpMath<T>;
      const F<A> f(c);
      if constexpr (std::is_same_v<T, float> && requires(float* p) { f.row(p, p, 0); }) {
        if (map_dense_float32(c.outputs[0], c.inputs[0], [&f](float* y, const float* x, int64_t n) { f.row(y, x, n); }))
          return;
      }
      if constexpr (kIs16BitFloat<T>) {
        map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0]}, [&f](float x) { return f.forward(x); });
      } else {
        map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [&f](T x) { return T(f.forward(static_cast<A>(x))); });
      }
    }
  });
}

// inputs: (grad, input), both of the input's dtype.
template <template <typename> class F>
void backward_kernel(const KernelContext& c) {
  visit_floating_dtype(c.inputs[1].meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const F<A> f(c);
    if constexpr (std::is_same_v<T, float> && requires(float* p) { f.row_backward(p, p, p, 0); }) {
      if (map_dense_float32(c.outputs[0], c.inputs[0], c.inputs[1],
                            [&f](float* y, const float* g, const float* x, int64_t n) { f.row_backward(y, g, x, n); }))
        return;
    }
    if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0], &c.inputs[1]},
                     [&f](float g, float x) { return f.backward(g, x); });
    } else {
      map_elements<T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]}, [&f](T g, T x) {
        return T(f.backward(static_cast<A>(g), static_cast<A>(x)));
      });
    }
  });
}

template <template <typename> class F>
void set_activation(const char* name) {
  ops::set_cpu_kernel(name, forward_kernel<F>);
  ops::set_cpu_kernel(std::string(name) + "_backward", backward_kernel<F>);
}

}  // namespace

void register_activation_kernels() {
  set_activation<Gelu>("gelu");
  set_activation<Silu>("silu");
  set_activation<Softplus>("softplus");
  set_activation<LeakyRelu>("leaky_relu");
  set_activation<Elu>("elu");
  set_activation<Hardtanh>("hardtanh");
  ops::set_cpu_kernel("hardshrink", forward_kernel<Hardshrink>);
}

}  // namespace rill::cpu
