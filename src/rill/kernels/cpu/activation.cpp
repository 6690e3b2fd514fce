// CPU kernels of the activations (ops/elementwise.cpp, kActivationOps) and of their
// backward ops (`<name>_backward(grad, input)`, same number arguments). Each
// activation is one functor over the compute type A (float for 16-bit floats):
// forward(x), backward(g, x), and for dense float32 tensors 16-lane vec / vec_backward
// forms on libmvec (Note [Vector math] in elementwise.cpp). The formulas are
// PyTorch's, so values and gradients agree at ties (x == 0, x == threshold).
#include <cmath>
#include <type_traits>

#include "rill/kernels/cpu/erf.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/vector_math.h"
#include "rill/ops/elementwise.h"

namespace rill::cpu {
namespace {

#if defined(RILL_VECTOR_MATH)
using V = __m512;
inline V splat(float v) { return _mm512_set1_ps(v); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V div(V a, V b) { return _mm512_div_ps(a, b); }
#endif

// erf in the compute type: rill's own for float (Note [Vectorised erf]), so every
// float32 layout and the 16-bit floats agree with the 16-lane path; libm's for double.
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
#if defined(RILL_VECTOR_MATH)
  V vec(V x) const {
    if (tanh_form) {
      V inner = mul(splat(kBeta), add(x, mul(splat(kKappa), mul(mul(x, x), x))));
      return mul(mul(splat(0.5f), x), add(splat(1.f), _ZGVeN16v_tanhf(inner)));
    }
    return mul(mul(x, splat(0.5f)), add(splat(1.f), erf_float16(mul(x, splat(float(M_SQRT1_2))))));
  }
  V vec_backward(V g, V x) const {
    if (tanh_form) {
      V x_sq = mul(x, x);
      V t = _ZGVeN16v_tanhf(mul(splat(kBeta), add(x, mul(splat(kKappa), mul(x_sq, x)))));
      V left = mul(splat(0.5f), x), right = add(splat(1.f), t);
      V right_derivative = mul(mul(mul(left, sub(splat(1.f), mul(t, t))), splat(kBeta)),
                               add(splat(1.f), mul(splat(3.f * kKappa), x_sq)));
      return mul(g, add(mul(splat(0.5f), right), right_derivative));
    }
    V cdf = mul(splat(0.5f), add(splat(1.f), erf_float16(mul(x, splat(float(M_SQRT1_2))))));
    V pdf = mul(splat(float(M_2_SQRTPI * M_SQRT1_2 * 0.5)), _ZGVeN16v_expf(mul(mul(x, x), splat(-0.5f))));
    return mul(g, add(cdf, mul(x, pdf)));
  }
#endif
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
#if defined(RILL_VECTOR_MATH)
  V vec(V x) const { return div(x, add(splat(1.f), _ZGVeN16v_expf(sub(splat(0.f), x)))); }
  V vec_backward(V g, V x) const {
    V s = div(splat(1.f), add(splat(1.f), _ZGVeN16v_expf(sub(splat(0.f), x))));
    return mul(mul(g, s), add(splat(1.f), mul(x, sub(splat(1.f), s))));
  }
#endif
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
#if defined(RILL_VECTOR_MATH)
  V vec(V x) const {
    V t = mul(x, splat(beta));
    V r = div(_ZGVeN16v_log1pf(_ZGVeN16v_expf(t)), splat(beta));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, splat(threshold), _CMP_GT_OQ), r, x);
  }
  V vec_backward(V g, V x) const {
    V t = mul(x, splat(beta));
    V z = _ZGVeN16v_expf(t);
    V r = div(mul(g, z), add(z, splat(1.f)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, splat(threshold), _CMP_GT_OQ), r, g);
  }
#endif
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
#if defined(RILL_VECTOR_MATH)
  V vec(V x) const {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, splat(0.f), _CMP_LE_OQ), x,
                                mul(_ZGVeN16v_expm1f(x), splat(alpha)));
  }
#endif
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
#if defined(RILL_VECTOR_MATH)
      if constexpr (std::is_same_v<T, float> && requires(V v) { f.vec(v); }) {
        if (map_dense_float32(c.outputs[0], c.inputs[0], [&f](V v) { return f.vec(v); })) return;
      }
#endif
      if constexpr (std::is_same_v<T, Half>) {
        map_float16<T>(c.outputs[0], std::array{&c.inputs[0]}, [&f](float x) { return f.forward(x); });
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
#if defined(RILL_VECTOR_MATH)
    if constexpr (std::is_same_v<T, float> && requires(V v) { f.vec_backward(v, v); }) {
      if (map_dense_float32(c.outputs[0], c.inputs[0], c.inputs[1],
                            [&f](V g, V x) { return f.vec_backward(g, x); }))
        return;
    }
#endif
    if constexpr (std::is_same_v<T, Half>) {
      map_float16<T>(c.outputs[0], std::array{&c.inputs[0], &c.inputs[1]},
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
