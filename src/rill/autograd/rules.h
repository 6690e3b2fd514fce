// Gradient rules: the one kind of backward there is. A rule belongs to an op
// (registered against its schema, one file per op family mirroring ops/:
// elementwise.cpp, reduce.cpp, matmul.cpp, copy.cpp, view.cpp, ...) and maps
// the gradients of the op's outputs to those of its inputs, from what the call
// saved, its attrs (read by name) and its input metas. The recorder
// (record.cpp) attaches an OpNode running the rule to every recorded call
// (Note [Recording] in eager/grad_mode.h). Rules compute with the functional
// API; backward runs with recording off, except for create_graph.
//
// Note [Gradients of gradients]
// backward/grad with create_graph=True run the same rules with recording on,
// so the ops a rule issues become a graph whose outputs are the gradients. For
// that graph to reach the forward's inputs, what a rule reads must carry
// history: GradContext::input(i) gives an alias of the saved input whose
// history is the node's edge i (the input's own grad_fn or AccumulateGrad),
// and output(i) an alias whose history is this node's output i. Saved tensors
// themselves stay history-free aliases, so no reference cycle runs through a
// grad_fn (node.h). An op a rule issues that has no rule of its own raises at
// the create_graph backward, never giving a silently missing term.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/autograd/node.h"
#include "rill/eager/functional.h"
#include "rill/eager/grad_mode.h"

namespace rill::autograd {

class OpNode;

/** What a rule sees: the gradients of the op's outputs and what the op saved. */
class GradContext {
 public:
  GradContext(const OpNode& node, std::span<const Tensor> grads, bool every_input = false)
      : node_(node), grads_(grads), every_input_(every_input) {}
  /** Gradient of output i (zeros when none arrived). */
  const Tensor& grad(size_t i = 0) const { return grads_[i]; }
  /** Saved input i (the rule must have asked for it). */
  Tensor input(size_t i) const;
  /** Saved output i (the rule must have asked for it). */
  Tensor output(size_t i) const;
  /** The op call's Python-number arguments. */
  std::span<const Scalar> scalars() const;
  /** The op call's attrs. */
  const Attrs& attrs() const;
  /** The attr called name (Note [Arguments of an op call]). */
  template <typename T>
  const T& attr(std::string_view name) const {
    return attr_of<T>(op(), attrs(), name);
  }
  /** The attrs as the call interned them (to call an op with the same attrs). */
  AttrsSym interned_attrs() const;
  /** The op whose gradient this is. */
  const OpSchema& op() const;
  /** Shape and dtype of input i as the op received it. */
  const TensorMeta& input_meta(size_t i) const;
  /** True when input i's gradient goes somewhere (others may be left undefined). */
  bool needs_grad(size_t i) const;
  /** Number of tensor inputs of the op call (ops with optional inputs take a varying number). */
  size_t num_inputs() const;

 private:
  const OpNode& node_;
  std::span<const Tensor> grads_;
  bool every_input_;
};

/** A rule's backward: one gradient per op input, each broadcastable to the input's shape (the node sums it
 * down and converts it to the input's dtype); undefined for an input that gets none. */
using BackwardFn = std::vector<Tensor> (*)(const GradContext&);

/** The gradient rule of one op. */
struct GradRule {
  /** PyTorch's node name, e.g. "AddBackward0". */
  std::string node_name;
  /** Null: the op is not differentiable (comparisons, argmax): its outputs never require grad. */
  BackwardFn backward = nullptr;
  /** Bit i: the rule reads input i. */
  uint32_t saved_inputs = 0;
  /** Bit i: the rule reads output i. */
  uint32_t saved_outputs = 0;
  /** The node's name when it depends on the call (sum over all dims is SumBackward0, over some SumBackward1);
   * null: node_name. */
  const char* (*name_of)(const GradContext& c) = nullptr;
};

/** Register the rule of the op called op (a bug when there is no such op, or it has a rule already). */
void define_rule(std::string_view op, GradRule rule);
/** The rule of op, or null when it has none (every rule family registers on first use). */
const GradRule* find_rule(const OpSchema& op);

/** Per-family registration, called once by find_rule. */
void register_elementwise_rules();
void register_special_rules();
void register_reduce_rules();
void register_matmul_rules();
void register_copy_rules();
void register_shape_rules();
void register_index_rules();
void register_sort_rules();
void register_nn_rules();
void register_view_rules();
void register_conv_rules();
void register_linalg_rules();
void register_experimental_rules();
void register_boxing_rules();

/** The backward node of one recorded op call. */
class OpNode : public Node {
 public:
  /** Edges and saved inputs come from inputs as they are now (before an in-place write). */
  OpNode(const OpSchema& op, const GradRule& rule, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
         AttrsSym attrs, std::vector<MetaSym> output_metas);
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  /** The rule's gradients; every_input: for every input, whether it needs one or not (a view's gradient
   * mapped to its base, Note [Views and in-place] in node.h). */
  std::vector<Tensor> gradients(std::vector<Tensor> grads, bool every_input) const;
  void release_saved() override;
  /** Save input i (or a stand-in with its value, for an in-place op that overwrites it). */
  void save_input(size_t i, const Tensor& t) { saved_inputs_[i] = SavedTensor(t); }
  /** Save output i. */
  void save_output(size_t i, const Tensor& t) { saved_outputs_[i] = SavedTensor(t, static_cast<int>(i)); }

 private:
  friend class GradContext;
  const OpSchema& op_;
  const GradRule& rule_;
  std::string name_;
  std::vector<SavedTensor> saved_inputs_;
  std::vector<SavedTensor> saved_outputs_;
  std::vector<Scalar> scalars_;
  AttrsSym attrs_;
  std::vector<MetaSym> input_metas_;
  std::vector<MetaSym> output_metas_;
};

// --- in-place writes (copy.cpp) ---------------------------------------------------------------

/** Raise PyTorch's error when self is a leaf that requires grad, or a view of one (grad mode only). */
void check_inplace(const Tensor& self);
/** Make node (whose input 0 is self's old value) the history of self after an in-place write; a view's
 * base gets a CopySlices node (Note [Views and in-place] in node.h). */
void rebase_history(const Tensor& self, std::shared_ptr<Node> node);

// --- helpers for rules (eager ops, no recording) ---------------------------------------------

/** g summed over the dims it was broadcast along (and expanded where it is smaller), to shape. */
Tensor sum_to(const Tensor& g, const Shape& shape);
/** A 0-dim tensor holding value, of dtype. */
Tensor scalar_tensor(Scalar value, DType dtype);
/** Zeros of shape and dtype. */
Tensor zeros(const Shape& shape, DType dtype);

}  // namespace rill::autograd
