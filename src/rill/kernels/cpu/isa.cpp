#include <string>

#include "rill/core/half.h"
#include "rill/kernels/cpu/isa_rows.h"
#include "rill/util/env.h"
#include "rill/util/error.h"

namespace rill::cpu {

// Note [One build for every x86-64]
// The library is built for plain x86-64 (no -march=native by default: a wheel built on one machine must run
// on any other), and the hot row loops (isa_rows.cpp: float32 arithmetic, vector math, activations and
// their gradients, float16 conversion, the reductions of softmax and the norms) are built three times more
// narrowly: for the baseline, for AVX2 + FMA + F16C and for AVX-512, each in a namespace of its own, so no
// function of one build can be taken for another's at link time. For the same reason that file includes
// no header with inline functions of its own (they would be compiled for its instruction set and could be
// merged with other files' copies): its vector layer, isa_lanes.h, lives inside the build's namespace.
// Which build runs is decided here and only here, once, from the CPU's features (__builtin_cpu_supports),
// or forced with RILL_CPU_ISA=baseline|avx2|avx512 (a set the CPU lacks raises). Kernels call
// row_kernels() and never test the instruction set themselves. Other CPUs than x86-64 have the baseline
// build only.

void float16_to_float_scalar(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Half::to_float(in[i]);
}

void float_to_float16_scalar(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Half::from_float(in[i]);
}

#if defined(__x86_64__)
bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }
  return false;
}
#else
bool isa_supported(Isa isa) { return isa == Isa::kBaseline; }
#endif

const RowKernels& row_kernels_for(Isa isa) {
  RILL_CHECK(isa_supported(isa), Runtime, "[RILL_CPU_ISA] this CPU cannot run the ",
             isa == Isa::kAvx512 ? "avx512" : "avx2", " kernels; use baseline, avx2 or leave RILL_CPU_ISA unset");
#if defined(__x86_64__)
  switch (isa) {
    case Isa::kAvx512:
      return isa_avx512::kRowKernels;
    case Isa::kAvx2:
      return isa_avx2::kRowKernels;
    case Isa::kBaseline:
      break;
  }
#endif
  return isa_baseline::kRowKernels;
}

namespace {
const RowKernels& choose() {
  std::string forced = env::get_string("RILL_CPU_ISA").value_or("");
  if (forced == "baseline") return row_kernels_for(Isa::kBaseline);
  if (forced == "avx2") return row_kernels_for(Isa::kAvx2);
  if (forced == "avx512") return row_kernels_for(Isa::kAvx512);
  RILL_CHECK(forced.empty(), Value, "[RILL_CPU_ISA] unknown instruction set '", forced,
             "': use baseline, avx2 or avx512 (or leave it unset to choose from the CPU)");
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    if (isa_supported(isa)) return row_kernels_for(isa);
  return row_kernels_for(Isa::kBaseline);
}
}  // namespace

const RowKernels& row_kernels() {
  static const RowKernels& chosen = choose();
  return chosen;
}

}  // namespace rill::cpu
