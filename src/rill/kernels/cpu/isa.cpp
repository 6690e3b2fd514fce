#include <string>

#include "rill/kernels/cpu/isa_rows.h"
#include "rill/util/env.h"
#include "rill/util/error.h"

namespace rill::cpu {

// Note [One build for every x86-64]
// The library is built for plain x86-64 (no -march=native: a wheel built on one machine must run on any
// other), and the hot row loops (isa_rows.cpp) are built three times more narrowly: for the baseline, for
// AVX2 + FMA and for AVX-512, each in a namespace of its own, so no function of one build can be taken for
// another's at link time. Which build runs is decided here and only here, once, from the CPU's features
// (__builtin_cpu_supports), or forced with RILL_CPU_ISA=baseline|avx2|avx512 (a set the CPU lacks raises).
// Kernels call row_kernels() and never test the instruction set themselves.

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

const RowKernels& row_kernels_for(Isa isa) {
  RILL_CHECK(isa_supported(isa), Runtime, "[RILL_CPU_ISA] this CPU cannot run the ",
             isa == Isa::kAvx512 ? "avx512" : "avx2", " kernels; use baseline, avx2 or leave RILL_CPU_ISA unset");
  switch (isa) {
    case Isa::kAvx512:
      return isa_avx512::kRowKernels;
    case Isa::kAvx2:
      return isa_avx2::kRowKernels;
    case Isa::kBaseline:
      break;
  }
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
