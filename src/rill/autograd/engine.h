// The backward engine: from root tensors and their gradients, counts each
// reachable node's in-degree, then runs nodes as their gradients complete
// (later-created nodes first, as PyTorch does), summing the gradients that
// arrive at each node input. It calls rules that only issue eager ops, so it
// never waits on the VM. It runs with grad mode off, or on for create_graph
// (Note [Gradients of gradients] in rules.h).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "rill/core/tensor.h"

namespace rill::autograd {

/** Install autograd's recorder into eager's one call() (Note [Recording] in eager/grad_mode.h); once per
 * process, before ops should record (the Python module and the C++ tests do it at start-up). */
void install();

/** tensors.backward(grads): accumulate gradients into the leaves' .grad. An undefined entry of grads means
 * ones (scalar outputs only). inputs, when not empty, limits accumulation to those tensors. */
void backward(std::span<const Tensor> tensors, std::span<const Tensor> grads, bool retain_graph,
              std::span<const Tensor> inputs = {}, bool create_graph = false);

/** The gradients of outputs with respect to inputs (autograd.grad); an input that no gradient reaches gets
 * an undefined tensor when allow_unused, else raises. */
std::vector<Tensor> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                         std::span<const Tensor> grad_outputs, bool retain_graph, bool allow_unused,
                         bool create_graph = false);

/** True while the calling thread runs a backward with create_graph (its rules' ops are recorded). */
bool creating_graph();

/** Anomaly mode (rill.autograd.detect_anomaly / set_detect_anomaly), process-wide as in PyTorch: with
 * check_nan, every node's gradients are read as it returns them, and a NaN raises naming the node. */
void set_anomaly_mode(bool enabled, bool check_nan);
bool anomaly_enabled();
bool anomaly_check_nan();

}  // namespace rill::autograd
