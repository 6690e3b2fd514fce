// The row loops of isa_rows.h. CMake builds this file once per instruction set, each time with that set's
// compiler flags and RILL_ISA_NS naming its namespace (Note [One build for every x86-64] in isa.cpp).
#include "rill/kernels/cpu/isa_rows.h"

namespace rill::cpu::RILL_ISA_NS {
namespace {

void add(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void sub(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}
void mul(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
void div(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
}

}  // namespace

const RowKernels kRowKernels{RILL_ISA_NAME, add, sub, mul, div};

}  // namespace rill::cpu::RILL_ISA_NS
