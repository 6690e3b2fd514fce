#include "rill/eager/grad_mode.h"

namespace rill::eager {
namespace {

thread_local bool t_grad_enabled = true;
const Recorder* g_recorder = nullptr;

}  // namespace

bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

void set_recorder(const Recorder* r) { g_recorder = r; }
const Recorder* recorder() { return g_recorder; }

bool should_record(std::span<const Tensor> inputs) {
  if (!t_grad_enabled || g_recorder == nullptr) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.impl()->requires_grad()) return true;
  return false;
}

}  // namespace rill::eager
