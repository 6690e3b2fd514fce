// Heap allocations (operator new) the calling thread makes while it counts them. One replacement of the global
// operator new serves the whole test binary (defined in allocations.cpp).
#pragma once

#include <cstdint>

namespace rill::test {

/** Start (from 0) or stop counting this thread's allocations. */
void count_allocations(bool on);
/** This thread's allocations since it last started counting. */
int64_t allocations();

}  // namespace rill::test
