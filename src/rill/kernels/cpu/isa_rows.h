// The hot dense float32 row loops, built once per x86-64 instruction set and chosen at run time
// (Note [One build for every x86-64] in isa.cpp). Plain pointers only: the file built several times
// (isa_rows.cpp) includes nothing that could instantiate an inline function shared with other files.
#pragma once

#include <cstdint>

namespace rill::cpu {

/** Instruction sets with a build of the row loops, from the plainest up. */
enum class Isa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

/** One build of the row loops: out[i] = a[i] op b[i] over n elements (out may alias a or b). */
struct RowKernels {
  const char* name;
  void (*add)(float* out, const float* a, const float* b, int64_t n);
  void (*sub)(float* out, const float* a, const float* b, int64_t n);
  void (*mul)(float* out, const float* a, const float* b, int64_t n);
  void (*div)(float* out, const float* a, const float* b, int64_t n);
};

namespace isa_baseline {
/** The build for any x86-64 (SSE2). */
extern const RowKernels kRowKernels;
}  // namespace isa_baseline
namespace isa_avx2 {
/** The build for AVX2 + FMA. */
extern const RowKernels kRowKernels;
}  // namespace isa_avx2
namespace isa_avx512 {
/** The build for AVX-512 (F, BW, DQ, VL). */
extern const RowKernels kRowKernels;
}  // namespace isa_avx512

/** True when this CPU can run isa's build. */
bool isa_supported(Isa isa);
/** The row loops built for isa (which must be supported). */
const RowKernels& row_kernels_for(Isa isa);
/** The row loops this process uses: the best supported build, or RILL_CPU_ISA's (chosen once, at first use). */
const RowKernels& row_kernels();

}  // namespace rill::cpu
