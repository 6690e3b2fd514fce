// CPU kernels of the elementwise family (ops/elementwise.cpp). Inputs arrive
// already converted to the compute dtype; arithmetic on 16-bit floats is done in float.
#include "rill/ops/elementwise.h"

#include <cmath>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

#if defined(RILL_HAVE_LIBMVEC) && defined(__AVX512F__)
#include <immintrin.h>
#define RILL_VECTOR_MATH 1
// glibc's libmvec: 16-lane float32 versions of expf/logf/tanhf (x86-64 vector ABI names).
extern "C" __m512 _ZGVeN16v_expf(__m512);
extern "C" __m512 _ZGVeN16v_logf(__m512);
extern "C" __m512 _ZGVeN16v_tanhf(__m512);
#endif

namespace rill::cpu {
namespace {

template <typename T>
using M = OpMath<T>;

// --- functors: operate on OpMath<T> values -------------------------------------------
struct Neg { template <typename T> T operator()(T a) const { return -a; } };
struct Abs {
  template <typename T> T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) return a;
    else return a < 0 ? -a : a;
  }
};
struct Relu {
  template <typename T> T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) return a > T(0) ? a : (a != a ? a : T(0));  // keep NaN
    else return a > T(0) ? a : T(0);
  }
};
struct Exp { template <typename T> T operator()(T a) const { return std::exp(a); } };
struct Log { template <typename T> T operator()(T a) const { return std::log(a); } };
struct Sqrt { template <typename T> T operator()(T a) const { return std::sqrt(a); } };
struct Sigmoid { template <typename T> T operator()(T a) const { return T(1) / (T(1) + std::exp(-a)); } };
struct Tanh { template <typename T> T operator()(T a) const { return std::tanh(a); } };

struct Add {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return a + b;
  }
};
struct Sub { template <typename T> T operator()(T a, T b) const { return a - b; } };
struct Mul {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return a * b;
  }
};
struct Div { template <typename T> T operator()(T a, T b) const { return a / b; } };
struct Pow {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<T>) {
        // PyTorch gives 0 here (1 / a^-b truncated) for |a| > 1; rill raises instead
        // (tests/cpp/eager/eager_test.cpp, Eager.ErrorsAreTyped, pins this).
        if (b < 0) {
          RILL_CHECK(a == 1 || a == -1, Runtime, "[pow] integers to negative integer powers are not "
                     "allowed; convert the base to float first");
          return (a == 1 || b % 2 == 0) ? T(1) : T(-1);
        }
      }
      // Square-and-multiply in unsigned arithmetic, so overflow wraps instead of being undefined.
      using U = std::make_unsigned_t<T>;
      U base = static_cast<U>(a);
      U r = 1;
      for (auto e = b; e > 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(r);
    }
  }
};
struct Maximum {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) { if (a != a || b != b) return a != a ? a : b; }
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) { if (a != a || b != b) return a != a ? a : b; }
    return a < b ? a : b;
  }
};
struct Eq { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <typename T> bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct Le { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <typename T> bool operator()(T a, T b) const { return a >= b; } };

// --- kernels ------------------------------------------------------------------------------
template <typename F>
void unary_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> && !std::is_same_v<F, Abs> && !std::is_same_v<F, Relu>) {
      RILL_FAIL(Type, "[", c.op.name, "] is not supported for bool tensors");
    } else {
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T a) { return T(F()(M<T>(a))); });
    }
  });
}

// Note [Vector math]
// std::exp/log/tanh are scalar calls; a loop of them ran exp/tanh several times
// slower than PyTorch's vectorised kernels (the 64x64 op chain in bench/). For
// dense float32 tensors, exp, log and tanh go through glibc's libmvec 16-lane
// versions instead (within 4 ulp, tested against PyTorch like every op).
template <typename F>
bool unary_float32_vector(const KernelContext& c) {
#if defined(RILL_VECTOR_MATH)
  __m512 (*vfn)(__m512) = nullptr;
  if constexpr (std::is_same_v<F, Exp>) vfn = _ZGVeN16v_expf;
  if constexpr (std::is_same_v<F, Log>) vfn = _ZGVeN16v_logf;
  if constexpr (std::is_same_v<F, Tanh>) vfn = _ZGVeN16v_tanhf;
  const TensorMeta& in = *c.inputs[0].meta;
  const TensorMeta& out = *c.outputs[0].meta;
  if (!vfn || in.dtype != DType::kFloat32 || !in.contiguous || !out.contiguous || in.shape != out.shape) return false;
  const float* x = c.inputs[0].ptr<float>();
  float* y = c.outputs[0].ptr<float>();
  parallel::parallel_for(0, in.numel, kParallelGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 16 <= e; i += 16) _mm512_storeu_ps(y + i, vfn(_mm512_loadu_ps(x + i)));
    if (i < e) {  // the tail, through a masked load so the lanes stay on the same code path
      __mmask16 m = static_cast<__mmask16>((1u << (e - i)) - 1);
      _mm512_mask_storeu_ps(y + i, m, vfn(_mm512_maskz_loadu_ps(m, x + i)));
    }
  });
  return true;
#else
  (void)c;
  return false;
#endif
}

template <typename F>
void unary_float_kernel(const KernelContext& c) {
  if (unary_float32_vector<F>(c)) return;
  visit_floating_dtype(c.inputs[0].meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T a) { return T(F()(M<T>(a))); });
  });
}

// Out is T for arithmetic, bool for comparisons.
template <typename F, bool kCompare>
void binary_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<kCompare, bool, T>;
    map_elements<Out, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]},
                            [](T a, T b) { return Out(F()(M<T>(a), M<T>(b))); });
  });
}

// Note [Python numbers with 16-bit floats]
// PyTorch's CPU mul and div keep a Python number in float32 when the tensor is
// float16 or bfloat16 (x * 0.1 is float(x) * 0.1f, rounded once), while add, sub,
// the comparisons and the rest first round the number to the tensor's dtype
// (x - 0.1 is x - half(0.1): zero for x = half(0.1)). We do the same, bit for bit.
template <typename F>
inline constexpr bool kScalarInOpMath = std::is_same_v<F, Mul> || std::is_same_v<F, Div>;

// tensor op scalar (kReverse: scalar op tensor).
template <typename F, bool kCompare, bool kReverse>
void binary_scalar_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<kCompare, bool, T>;
    if constexpr (std::is_same_v<F, Pow> && !kReverse && std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // PyTorch rejects x ** n for an integer tensor and a negative integer n, whatever x holds.
      RILL_CHECK(c.scalars[0].to_int() >= 0, Runtime, "[pow] Integers to negative integer powers are not "
                 "allowed; convert the base to float first");
    }
    const M<T> s = kScalarInOpMath<F> ? c.scalars[0].to<M<T>>() : static_cast<M<T>>(c.scalars[0].to<T>());
    if constexpr (kReverse) {
      map_elements<Out, T>(c.outputs[0], {&c.inputs[0]}, [s](T a) { return Out(F()(s, M<T>(a))); });
    } else {
      map_elements<Out, T>(c.outputs[0], {&c.inputs[0]}, [s](T a) { return Out(F()(M<T>(a), s)); });
    }
  });
}

void where_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[1].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, bool, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]},
                                [](bool k, T a, T b) { return k ? a : b; });
  });
}

// Conversion between any two dtypes, through OpMath so 16-bit floats round once.
template <typename Dst, typename Src>
Dst convert(Src v) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return static_cast<M<Src>>(v) != M<Src>(0);
  } else if constexpr (kIsFloating<Dst>) {
    return Dst(static_cast<M<Dst>>(static_cast<M<Src>>(v)));
  } else if constexpr (kIsFloating<Src>) {
    // float -> int: truncation toward zero, as C++ and PyTorch do (out of range is undefined there too;
    // go through int64 so values that fit int64 wrap like PyTorch on x86).
    return static_cast<Dst>(static_cast<int64_t>(static_cast<M<Src>>(v)));
  } else {
    return static_cast<Dst>(v);
  }
}

void cast_kernel(const KernelContext& c) {
  visit_dtype(c.outputs[0].meta->dtype, [&](auto out_tag) {
    using Dst = typename decltype(out_tag)::type;
    visit_dtype(c.inputs[0].meta->dtype, [&](auto in_tag) {
      using Src = typename decltype(in_tag)::type;
      map_elements<Dst, Src>(c.outputs[0], {&c.inputs[0]}, [](Src v) { return convert<Dst, Src>(v); });
    });
  });
}

template <typename F>
void set_binary(std::string_view name) {
  std::string n(name);
  ops::set_cpu_kernel(n, binary_kernel<F, false>);
  ops::set_cpu_kernel(n + "_scalar", binary_scalar_kernel<F, false, false>);
  ops::set_cpu_kernel("r" + n + "_scalar", binary_scalar_kernel<F, false, true>);
}

template <typename F>
void set_compare(std::string_view name) {
  std::string n(name);
  ops::set_cpu_kernel(n, binary_kernel<F, true>);
  ops::set_cpu_kernel(n + "_scalar", binary_scalar_kernel<F, true, false>);
}

}  // namespace

void register_elementwise_kernels() {
  ops::set_cpu_kernel("neg", unary_kernel<Neg>);
  ops::set_cpu_kernel("abs", unary_kernel<Abs>);
  ops::set_cpu_kernel("relu", unary_kernel<Relu>);
  ops::set_cpu_kernel("exp", unary_float_kernel<Exp>);
  ops::set_cpu_kernel("log", unary_float_kernel<Log>);
  ops::set_cpu_kernel("sqrt", unary_float_kernel<Sqrt>);
  ops::set_cpu_kernel("sigmoid", unary_float_kernel<Sigmoid>);
  ops::set_cpu_kernel("tanh", unary_float_kernel<Tanh>);
  set_binary<Add>("add");
  set_binary<Sub>("sub");
  set_binary<Mul>("mul");
  set_binary<Pow>("pow");
  set_binary<Maximum>("maximum");
  set_binary<Minimum>("minimum");
  ops::set_cpu_kernel("div", binary_kernel<Div, false>);
  ops::set_cpu_kernel("div_scalar", binary_scalar_kernel<Div, false, false>);
  ops::set_cpu_kernel("rdiv_scalar", binary_scalar_kernel<Div, false, true>);
  set_compare<Eq>("eq");
  set_compare<Ne>("ne");
  set_compare<Lt>("lt");
  set_compare<Le>("le");
  set_compare<Gt>("gt");
  set_compare<Ge>("ge");
  ops::set_cpu_kernel("where", where_kernel);
  ops::set_cpu_kernel("cast", cast_kernel);
}

}  // namespace rill::cpu
