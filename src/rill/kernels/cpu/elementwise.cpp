// CPU kernels of the elementwise family (ops/elementwise.cpp). Inputs arrive
// already converted to the compute dtype; arithmetic on 16-bit floats is done in float.
// The activations (gelu, softplus, ...) and their backward kernels are in activation.cpp.
#include "rill/ops/elementwise.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/vector_math.h"

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
// sign(NaN) is 0, as in PyTorch.
struct Sign {
  template <typename T> T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) return a > T(0);
    else return T((T(0) < a) - (a < T(0)));
  }
};

struct Exp { template <typename T> T operator()(T a) const { return std::exp(a); } };
struct Log { template <typename T> T operator()(T a) const { return std::log(a); } };
struct Sqrt { template <typename T> T operator()(T a) const { return std::sqrt(a); } };
struct Sigmoid { template <typename T> T operator()(T a) const { return T(1) / (T(1) + std::exp(-a)); } };
struct Tanh { template <typename T> T operator()(T a) const { return std::tanh(a); } };
struct Log1p { template <typename T> T operator()(T a) const { return std::log1p(a); } };
struct Expm1 { template <typename T> T operator()(T a) const { return std::expm1(a); } };
struct Rsqrt { template <typename T> T operator()(T a) const { return T(1) / std::sqrt(a); } };
struct Sin { template <typename T> T operator()(T a) const { return std::sin(a); } };
struct Cos { template <typename T> T operator()(T a) const { return std::cos(a); } };
struct Erf { template <typename T> T operator()(T a) const { return std::erf(a); } };
struct Reciprocal { template <typename T> T operator()(T a) const { return T(1) / a; } };

// The float32 row of a unary functor, where the row kernels have one (Note [Vector math]).
template <typename F> inline constexpr UnaryMath kRowOf = UnaryMath::kCount;
template <> inline constexpr UnaryMath kRowOf<Exp> = UnaryMath::kExp;
template <> inline constexpr UnaryMath kRowOf<Log> = UnaryMath::kLog;
template <> inline constexpr UnaryMath kRowOf<Tanh> = UnaryMath::kTanh;
template <> inline constexpr UnaryMath kRowOf<Log1p> = UnaryMath::kLog1p;
template <> inline constexpr UnaryMath kRowOf<Expm1> = UnaryMath::kExpm1;
template <> inline constexpr UnaryMath kRowOf<Sin> = UnaryMath::kSin;
template <> inline constexpr UnaryMath kRowOf<Cos> = UnaryMath::kCos;
template <> inline constexpr UnaryMath kRowOf<Erf> = UnaryMath::kErf;

// Rounding: integers pass through. round is half to even (nearbyint in the default rounding mode).
template <typename T, typename Fn>
T round_float(T a, Fn fn) {
  if constexpr (std::is_floating_point_v<T>) return fn(a);
  else return a;
}
struct Floor {
  template <typename T> T operator()(T a) const { return round_float(a, [](auto v) { return std::floor(v); }); }
};
struct Ceil {
  template <typename T> T operator()(T a) const { return round_float(a, [](auto v) { return std::ceil(v); }); }
};
struct Trunc {
  template <typename T> T operator()(T a) const { return round_float(a, [](auto v) { return std::trunc(v); }); }
};
struct Round {
  template <typename T> T operator()(T a) const { return round_float(a, [](auto v) { return std::nearbyint(v); }); }
};

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
        // 1 / a^-b truncated, as PyTorch: 1 for a == 1, +-1 for a == -1 (by b's parity), 0 otherwise (a == 0
        // too). Only a negative Python number as the exponent is refused (binary_scalar_kernel, as PyTorch).
        if (b < 0) return a == 1 ? T(1) : a == -1 ? (b % 2 == 0 ? T(1) : T(-1)) : T(0);
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

// Integer division by zero raises, as in PyTorch (RuntimeError: ZeroDivisionError); INT_MIN / -1 wraps.
template <typename T>
inline void check_divisor(T b, const char* op) {
  if (b == T(0))
    RILL_FAIL(Runtime, "ZeroDivisionError: [", op, "] integer division by zero; convert to float for inf/nan "
              "results");
}

// PyTorch's div_floor_floating: floor of the exact quotient, computed from fmod.
template <typename T>
T floor_divide_float(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

struct FloorDivide {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return floor_divide_float(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a && b;  // unreachable: inference rejects bool
    } else {
      check_divisor(b, "floor_divide");
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(0u - static_cast<std::make_unsigned_t<T>>(a));
        T q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
      } else {
        return a / b;
      }
    }
  }
};
// remainder: the sign of the divisor (Python's %).
struct Remainder {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      T mod = std::fmod(a, b);
      return (mod != T(0) && (b < T(0)) != (mod < T(0))) ? mod + b : mod;
    } else if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else {
      check_divisor(b, "remainder");
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
      } else {
        return a % b;
      }
    }
  }
};
// fmod: the sign of the dividend (C's fmod and %).
struct Fmod {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else {
      check_divisor(b, "fmod");
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
      }
      return a % b;
    }
  }
};
// Bitwise ops: inference admits integers and bool only.
struct BitAnd {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return a & b;
    else return a;
  }
};
struct BitOr {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return a | b;
    else return a;
  }
};
struct BitXor {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return a ^ b;
    else return a;
  }
};
struct BitNot {
  template <typename T> T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool>) return !a;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(~a);
    else return a;
  }
};
struct LogicalXor { template <typename T> T operator()(T a, T b) const { return a != b; } };
struct Atan2 { template <typename T> T operator()(T a, T b) const { return std::atan2(a, b); } };
// log(e^a + e^b) = max + log1p(e^-|a - b|); two equal infinities give that infinity, not NaN.
struct LogAddExp {
  template <typename T> T operator()(T a, T b) const {
    if (std::isinf(a) && a == b) return a;
    return (a > b ? a : b) + std::log1p(std::exp(-std::abs(a - b)));
  }
};
// clamp_min / clamp_max with a tensor bound: NaN in x stays NaN.
struct ClampMin {
  template <typename T> T operator()(T a, T lo) const { return a < lo ? lo : a; }
};
struct ClampMax {
  template <typename T> T operator()(T a, T hi) const { return hi < a ? hi : a; }
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
    if constexpr (std::is_same_v<T, bool> && !std::is_same_v<F, Abs> && !std::is_same_v<F, Relu> &&
                  !std::is_same_v<F, Sign> && !std::is_same_v<F, BitNot>) {
      RILL_FAIL(Type, "[", c.op.name, "] is not supported for bool tensors");
    } else if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0]}, [](float a) { return F()(a); });
    } else {
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T a) { return T(F()(M<T>(a))); });
    }
  });
}

// Note [Vector math]
// std::exp/log/tanh are scalar calls; a loop of them ran exp/tanh several times
// slower than PyTorch's vectorised kernels (the 64x64 op chain in bench/). For
// dense float32 tensors, the ops whose functor has a kRowOf row (exp, log, tanh,
// log1p, expm1, sin, cos, erf, and the activations in activation.cpp built on
// them: gelu, silu, softplus, elu) go through the row kernels built for this CPU
// (Note [One build for every x86-64] in isa.cpp), which call glibc's libmvec
// 8-lane (AVX2) or 16-lane (AVX-512) versions instead (within 4 ulp, tested
// against PyTorch like every op). Other layouts and dtypes take the scalar loop.
template <typename F>
bool unary_float32_vector(const KernelContext& c) {
  if constexpr (kRowOf<F> != UnaryMath::kCount) {
    return map_dense_float32(c.outputs[0], c.inputs[0], row_kernels().unary[static_cast<int>(kRowOf<F>)]);
  }
  (void)c;
  return false;
}

template <typename F>
void unary_float_kernel(const KernelContext& c) {
  if (unary_float32_vector<F>(c)) return;
  visit_floating_dtype(c.inputs[0].meta->dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, T>(c.outputs[0], std::array{&c.inputs[0]}, [](float a) { return F()(a); });
    } else {
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T a) { return T(F()(M<T>(a))); });
    }
  });
}

// The dense float32 add/sub/mul/div of one size, through the row loops built for this CPU (Note [One build
// for every x86-64] in isa.cpp). False when the operands are not all dense and of the output's size.
template <typename F>
bool float_rows(const KernelContext& c) {
  const TensorArg& o = c.outputs[0];
  const TensorArg& a = c.inputs[0];
  const TensorArg& b = c.inputs[1];
  int64_t n = o.meta->numel;
  if (!o.meta->contiguous || !a.meta->contiguous || !b.meta->contiguous || a.meta->numel != n || b.meta->numel != n)
    return false;
  const RowKernels& k = row_kernels();
  auto row = std::is_same_v<F, Add> ? k.add : std::is_same_v<F, Sub> ? k.sub : std::is_same_v<F, Mul> ? k.mul : k.div;
  float* out = o.ptr<float>();
  const float* pa = static_cast<const float*>(a.data);
  const float* pb = static_cast<const float*>(b.data);
  parallel::parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) { row(out + lo, pa + lo, pb + lo, hi - lo); });
  return true;
}

// The same for dense float16 and bfloat16 operands: float16 as blocks converted to float32, the float32 row, and
// the block rounded back (Note [float16 rows] in loops.h); bfloat16 as one fused row. Every step is a row built
// for this CPU.
template <typename T, typename F>
bool float_rows_16bit(const KernelContext& c) {
  const TensorArg& o = c.outputs[0];
  const TensorArg& a = c.inputs[0];
  const TensorArg& b = c.inputs[1];
  int64_t n = o.meta->numel;
  if (!o.meta->contiguous || !a.meta->contiguous || !b.meta->contiguous || a.meta->numel != n || b.meta->numel != n)
    return false;
  const RowKernels& k = row_kernels();
  if constexpr (std::is_same_v<T, BFloat16>) {
    // bfloat16's conversions are shifts: one fused pass instead of blocks.
    auto row16 = std::is_same_v<F, Add>   ? k.bfloat16_add
                 : std::is_same_v<F, Sub> ? k.bfloat16_sub
                 : std::is_same_v<F, Mul> ? k.bfloat16_mul
                                          : k.bfloat16_div;
    uint16_t* out = &o.ptr<BFloat16>()->bits;
    const uint16_t* pa = &static_cast<const BFloat16*>(a.data)->bits;
    const uint16_t* pb = &static_cast<const BFloat16*>(b.data)->bits;
    parallel::parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) { row16(out + lo, pa + lo, pb + lo, hi - lo); });
    return true;
  }
  auto row = std::is_same_v<F, Add> ? k.add : std::is_same_v<F, Sub> ? k.sub : std::is_same_v<F, Mul> ? k.mul : k.div;
  T* out = o.ptr<T>();
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  parallel::parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
    constexpr int64_t B = 512;
    alignas(64) float fa[B], fb[B];
    for (int64_t i = lo; i < hi; i += B) {
      const int64_t m = std::min(B, hi - i);
      to_float_block(pa + i, fa, m);
      to_float_block(pb + i, fb, m);
      row(fa, fa, fb, m);
      from_float_block(fa, out + i, m);
    }
  });
  return true;
}

template <typename F>
inline constexpr bool kHasFloatRows =
    std::is_same_v<F, Add> || std::is_same_v<F, Sub> || std::is_same_v<F, Mul> || std::is_same_v<F, Div>;

// Out is T for arithmetic, bool for comparisons.
template <typename F, bool kCompare>
void binary_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<kCompare, bool, T>;
    if constexpr (std::is_same_v<T, float> && !kCompare && kHasFloatRows<F>) {
      if (float_rows<F>(c)) return;
    }
    if constexpr (kIs16BitFloat<T> && !kCompare && kHasFloatRows<F>) {
      if (float_rows_16bit<T, F>(c)) return;
    }
    if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, Out>(c.outputs[0], std::array{&c.inputs[0], &c.inputs[1]},
                       [](float a, float b) { return F()(a, b); });
    } else {
      map_elements<Out, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]},
                              [](T a, T b) { return Out(F()(M<T>(a), M<T>(b))); });
    }
  });
}

// Note [Python numbers with 16-bit floats]
// PyTorch's CPU mul and div keep a Python number in float32 when the tensor is
// float16 or bfloat16 (x * 0.1 is float(x) * 0.1f, rounded once), while add, sub,
// the comparisons and the rest first round the number to the tensor's dtype
// (x - 0.1 is x - half(0.1): zero for x = half(0.1)). We do the same, bit for bit.
template <typename F>
inline constexpr bool kScalarInOpMath = std::is_same_v<F, Mul> || std::is_same_v<F, Div>;

// x ** s for the exponents written most (x ** 2, x ** 0.5, ...) as multiplications, a division or a square
// root, which vectorise, instead of a call to std::pow per element (as PyTorch does, so the results match
// its). False for any other exponent.
template <typename T>
bool pow_small_exponent(const TensorArg& out, const TensorArg& in, T s) {
  const std::array<const TensorArg*, 1> ins{&in};
  if (s == T(2)) {
    map_elements<T, T>(out, ins, [](T a) { return a * a; });
  } else if (s == T(3)) {
    map_elements<T, T>(out, ins, [](T a) { return a * a * a; });
  } else if (s == T(0.5)) {
    map_elements<T, T>(out, ins, [](T a) { return std::sqrt(a); });
  } else if (s == T(1)) {
    map_elements<T, T>(out, ins, [](T a) { return a; });
  } else if (s == T(-1)) {
    map_elements<T, T>(out, ins, [](T a) { return T(1) / a; });
  } else if (s == T(-2)) {
    map_elements<T, T>(out, ins, [](T a) { return T(1) / (a * a); });
  } else if (s == T(-0.5)) {
    map_elements<T, T>(out, ins, [](T a) { return T(1) / std::sqrt(a); });
  } else {
    return false;
  }
  return true;
}

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
    if constexpr (std::is_same_v<F, Pow> && !kReverse && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
      if (pow_small_exponent<T>(c.outputs[0], c.inputs[0], s)) return;
    }
    if constexpr (kIs16BitFloat<T> && kReverse) {
      map_16bit<T, Out>(c.outputs[0], std::array{&c.inputs[0]}, [s](float a) { return F()(s, a); });
    } else if constexpr (kIs16BitFloat<T>) {
      map_16bit<T, Out>(c.outputs[0], std::array{&c.inputs[0]}, [s](float a) { return F()(a, s); });
    } else if constexpr (kReverse) {
      map_elements<Out, T>(c.outputs[0], {&c.inputs[0]}, [s](T a) { return Out(F()(s, M<T>(a))); });
    } else {
      map_elements<Out, T>(c.outputs[0], {&c.inputs[0]}, [s](T a) { return Out(F()(M<T>(a), s)); });
    }
  });
}

// round(x, decimals): PyTorch's formula, so ties and the scaling round the same way.
void round_decimals_kernel(const KernelContext& c) {
  int64_t decimals = c.attrs.get_int(0);
  const bool neg = decimals < 0;
  visit_floating_dtype(c.inputs[0].meta->dtype, "round", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const M<T> ten_pow = static_cast<M<T>>(std::pow(10.0, static_cast<double>(neg ? -decimals : decimals)));
    map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [ten_pow, neg](T v) {
      M<T> a = static_cast<M<T>>(v);
      return T(neg ? std::nearbyint(a / ten_pow) * ten_pow : std::nearbyint(a * ten_pow) / ten_pow);
    });
  });
}

void logical_not_kernel(const KernelContext& c) {
  map_elements<bool, bool>(c.outputs[0], {&c.inputs[0]}, [](bool a) { return !a; });
}

// clamp(x, min, max) with numbers, either maybe none (no bound). NaN in x stays NaN.
void clamp_scalar_kernel(const KernelContext& c) {
  const bool has_min = !c.scalars[0].is_none(), has_max = !c.scalars[1].is_none();
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const M<T> lo = static_cast<M<T>>(c.scalars[0].to<T>()), hi = static_cast<M<T>>(c.scalars[1].to<T>());
    map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [=](T v) {
      M<T> a = static_cast<M<T>>(v);
      if (has_min && a < lo) a = lo;
      if (has_max && hi < a) a = hi;
      return T(a);
    });
  });
}

// nan_to_num: NaN -> nan, +inf -> posinf, -inf -> neginf (None: 0, the dtype's largest and lowest finite
// values); integer and bool tensors are copied.
void nan_to_num_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloating<T>) {
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T v) { return v; });
    } else {
      double largest = std::numeric_limits<double>::max();
      if constexpr (std::is_same_v<T, float>) largest = std::numeric_limits<float>::max();
      if constexpr (kDTypeOf<T> == DType::kFloat16) largest = 65504.0;
      if constexpr (kDTypeOf<T> == DType::kBFloat16) largest = 3.3895313892515355e38;
      auto given = [&](const char* name, double fallback) {
        const double* v = optional_attr_of<double>(c.op, c.attrs, name);
        return static_cast<M<T>>(Scalar(v ? *v : fallback).to<T>());
      };
      const M<T> nan = given("nan", 0.0), posinf = given("posinf", largest), neginf = given("neginf", -largest);
      map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [=](T v) {
        const M<T> a = static_cast<M<T>>(v);
        return T(a != a ? nan : std::isinf(a) ? (a > 0 ? posinf : neginf) : a);
      });
    }
  });
}

// clamp(x, min, max) with tensor bounds: min(max(x, min), max), as in PyTorch (max wins when min > max).
void clamp_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]}, [](T x, T l, T h) {
      M<T> a = static_cast<M<T>>(x), lo = static_cast<M<T>>(l), hi = static_cast<M<T>>(h);
      if (a < lo) a = lo;
      if (hi < a) a = hi;
      return T(a);
    });
  });
}

// PyTorch's lerp: the formula switches at |weight| = 0.5 so both ends are exact.
template <typename Acc>
inline Acc lerp(Acc start, Acc end, Acc w) {
  return std::abs(w) < Acc(0.5) ? start + w * (end - start) : end - (end - start) * (Acc(1) - w);
}

void lerp_kernel(const KernelContext& c) {
  visit_floating_dtype(c.inputs[0].meta->dtype, "lerp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]}, [](T a, T b, T w) {
      return T(lerp<M<T>>(static_cast<M<T>>(a), static_cast<M<T>>(b), static_cast<M<T>>(w)));
    });
  });
}

void lerp_scalar_kernel(const KernelContext& c) {
  visit_floating_dtype(c.inputs[0].meta->dtype, "lerp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const M<T> w = c.scalars[0].to<M<T>>();
    map_elements<T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1]}, [w](T a, T b) {
      return T(lerp<M<T>>(static_cast<M<T>>(a), static_cast<M<T>>(b), w));
    });
  });
}

// addcmul: input + value * t1 * t2; addcdiv: input + value * t1 / t2 (PyTorch's order of operations).
template <bool kDiv>
void addc_kernel(const KernelContext& c) {
  visit_dtype(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      const bool v = c.scalars[0].to<bool>();
      map_elements<T, T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]},
                               [v](bool x, bool a, bool b) { return x || (v && a && b); });
    } else {
      const M<T> v = c.scalars[0].to<M<T>>();
      map_elements<T, T, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]}, [v](T x, T a, T b) {
        if constexpr (kDiv) return T(static_cast<M<T>>(x) + v * static_cast<M<T>>(a) / static_cast<M<T>>(b));
        else return T(static_cast<M<T>>(x) + v * static_cast<M<T>>(a) * static_cast<M<T>>(b));
      });
    }
  });
}

// where selects by bits, not by a branch: with a mask of random signs (relu's backward, where(x <= 0, 0, g))
// the branch mispredicted every other element, and 524k floats took 2.1 ms (PyTorch's where too, 2.0 ms); the
// bit select is a vector loop.
template <typename T>
T select_bits(bool k, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                               std::conditional_t<sizeof(T) == 2, uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(U) == sizeof(T));
  U m = static_cast<U>(U{0} - static_cast<U>(k));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & static_cast<U>(~m))));
}

// where on 4- and 8-byte values through the select rows built for this CPU, wherever each row of the plan has
// a dense output and mask and each value operand dense or broadcast along it (a 0-d zero, as relu's backward
// has); other rows element by element. False for other widths.
template <typename U, typename Row>
bool where_rows(const KernelContext& c, const Row (&rows)[4]) {
  if (dtype_itemsize(c.inputs[1].meta->dtype) != static_cast<int64_t>(sizeof(U))) return false;
  const TensorArg &out = c.outputs[0], &k = c.inputs[0], &a = c.inputs[1], &b = c.inputs[2];
  const int64_t n = out.meta->numel;
  auto dense_or_one = [n](const TensorArg& t) { return t.meta->contiguous && (t.meta->numel == n || t.meta->numel == 1); };
  if (out.meta->contiguous && k.meta->contiguous && k.meta->numel == n && dense_or_one(a) && dense_or_one(b)) {
    // One flat row (the common case): no plan to build.
    const int one = (a.meta->numel == 1 && n > 1 ? 1 : 0) | (b.meta->numel == 1 && n > 1 ? 2 : 0);
    parallel::parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
      rows[one](out.ptr<U>() + lo, static_cast<const bool*>(k.data) + lo,
                static_cast<const U*>(a.data) + ((one & 1) ? 0 : lo), static_cast<const U*>(b.data) + ((one & 2) ? 0 : lo),
                hi - lo);
    });
    return true;
  }
  ElementwisePlan<4> plan(c.outputs[0].meta->shape, {&c.outputs[0], &c.inputs[0], &c.inputs[1], &c.inputs[2]});
  constexpr int64_t w = sizeof(U);
  plan.run([&](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
    if (s[0] == w && s[1] == 1 && (s[2] == 0 || s[2] == w) && (s[3] == 0 || s[3] == w)) {
      rows[(s[2] == 0 ? 1 : 0) | (s[3] == 0 ? 2 : 0)](reinterpret_cast<U*>(p[0]), reinterpret_cast<const bool*>(p[1]),
                                                      reinterpret_cast<const U*>(p[2]), reinterpret_cast<const U*>(p[3]), n);
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<U*>(p[0] + i * s[0]) = select_bits(*reinterpret_cast<const bool*>(p[1] + i * s[1]),
                                                           *reinterpret_cast<const U*>(p[2] + i * s[2]),
                                                           *reinterpret_cast<const U*>(p[3] + i * s[3]));
  });
  return true;
}

void where_kernel(const KernelContext& c) {
  const RowKernels& k = row_kernels();
  if (where_rows<uint32_t>(c, k.select32) || where_rows<uint64_t>(c, k.select64)) return;
  visit_dtype(c.inputs[1].meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, bool, T, T>(c.outputs[0], {&c.inputs[0], &c.inputs[1], &c.inputs[2]},
                                [](bool k, T a, T b) { return select_bits(k, a, b); });
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

// float16 or bfloat16 <-> float32 of a dense tensor through the conversion rows (Note [float16 rows] in
// loops.h); false for other layouts.
template <typename Dst, typename Src>
bool cast_16bit_rows(const TensorArg& out, const TensorArg& in) {
  const int64_t n = out.meta->numel;
  if (!out.meta->contiguous || !in.meta->contiguous || in.meta->numel != n) return false;
  Dst* o = out.ptr<Dst>();
  const Src* x = static_cast<const Src*>(in.data);
  parallel::parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<Dst, float>) to_float_block(x + lo, o + lo, hi - lo);
    else from_float_block(x + lo, o + lo, hi - lo);
  });
  return true;
}

void cast_kernel(const KernelContext& c) {
  visit_dtype(c.outputs[0].meta->dtype, [&](auto out_tag) {
    using Dst = typename decltype(out_tag)::type;
    visit_dtype(c.inputs[0].meta->dtype, [&](auto in_tag) {
      using Src = typename decltype(in_tag)::type;
      if constexpr ((std::is_same_v<Dst, float> && kIs16BitFloat<Src>) ||
                    (kIs16BitFloat<Dst> && std::is_same_v<Src, float>)) {
        if (cast_16bit_rows<Dst, Src>(c.outputs[0], c.inputs[0])) return;
      }
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

  ops::set_cpu_kernel("sign", unary_kernel<Sign>);
  ops::set_cpu_kernel("floor", unary_kernel<Floor>);
  ops::set_cpu_kernel("ceil", unary_kernel<Ceil>);
  ops::set_cpu_kernel("trunc", unary_kernel<Trunc>);
  ops::set_cpu_kernel("round", unary_kernel<Round>);
  ops::set_cpu_kernel("round_decimals", round_decimals_kernel);
  ops::set_cpu_kernel("log1p", unary_float_kernel<Log1p>);
  ops::set_cpu_kernel("expm1", unary_float_kernel<Expm1>);
  ops::set_cpu_kernel("rsqrt", unary_float_kernel<Rsqrt>);
  ops::set_cpu_kernel("sin", unary_float_kernel<Sin>);
  ops::set_cpu_kernel("cos", unary_float_kernel<Cos>);
  ops::set_cpu_kernel("erf", unary_float_kernel<Erf>);
  ops::set_cpu_kernel("reciprocal", unary_float_kernel<Reciprocal>);
  ops::set_cpu_kernel("clamp_scalar", clamp_scalar_kernel);
  ops::set_cpu_kernel("clamp", clamp_kernel);
  ops::set_cpu_kernel("clamp_min", binary_kernel<ClampMin, false>);
  ops::set_cpu_kernel("clamp_max", binary_kernel<ClampMax, false>);
  set_binary<FloorDivide>("floor_divide");
  set_binary<Remainder>("remainder");
  set_binary<Fmod>("fmod");
  set_binary<BitAnd>("bitwise_and");
  set_binary<BitOr>("bitwise_or");
  set_binary<BitXor>("bitwise_xor");
  ops::set_cpu_kernel("bitwise_not", unary_kernel<BitNot>);
  ops::set_cpu_kernel("logical_and", binary_kernel<Mul, false>);  // on bool: a && b
  ops::set_cpu_kernel("logical_or", binary_kernel<Add, false>);   // on bool: a || b
  ops::set_cpu_kernel("logical_xor", binary_kernel<LogicalXor, false>);
  ops::set_cpu_kernel("logical_not", logical_not_kernel);
  ops::set_cpu_kernel("atan2", binary_kernel<Atan2, false>);
  ops::set_cpu_kernel("logaddexp", binary_kernel<LogAddExp, false>);
  ops::set_cpu_kernel("nan_to_num", nan_to_num_kernel);
  ops::set_cpu_kernel("lerp", lerp_kernel);
  ops::set_cpu_kernel("lerp_scalar", lerp_scalar_kernel);
  ops::set_cpu_kernel("addcmul", addc_kernel<false>);
  ops::set_cpu_kernel("addcdiv", addc_kernel<true>);
  register_activation_kernels();
  ops::set_cpu_kernel("cast", cast_kernel);
}

}  // namespace rill::cpu
