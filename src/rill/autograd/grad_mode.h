// Grad mode: a per-thread switch that decides whether ops record backward nodes
// (rill.no_grad(), rill.enable_grad(), rill.set_grad_enabled()). On by default.
#pragma once

namespace rill::autograd {

/** True when ops on the calling thread record backward nodes. */
bool grad_enabled();
/** Turn recording on or off for the calling thread. */
void set_grad_enabled(bool enabled);

/** Sets grad mode for a scope and restores the previous mode when it ends. */
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace rill::autograd
