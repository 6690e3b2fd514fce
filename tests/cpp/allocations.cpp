#include "allocations.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool t_counting = false;
thread_local int64_t t_allocations = 0;
}  // namespace

void* operator new(size_t n) {
  if (t_counting) ++t_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace rill::test {

void count_allocations(bool on) {
  if (on) t_allocations = 0;
  t_counting = on;
}

int64_t allocations() { return t_allocations; }

}  // namespace rill::test
