// Gradient rules, one file per op family mirroring ops/ (elementwise.cpp,
// reduce.cpp, matmul.cpp, copy.cpp; views in view.cpp). A rule is registered
// under its op's name with what it saves; record() (functional.h) attaches an
// OpNode running it. Adding an op = schema in ops/, kernel in kernels/cpu/,
// rule here.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/autograd/node.h"
#include "rill/eager/functional.h"

namespace rill::autograd {

class OpNode;

/** What a rule sees: the gradients of the op's outputs and what the op saved. */
class GradContext {
 public:
  GradContext(const OpNode& node, std::span<const Tensor> grads) : node_(node), grads_(grads) {}
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
  /** Shape and dtype of input i as the op received it. */
  const TensorMeta& input_meta(size_t i) const;
  /** True when input i's gradient goes somewhere (others may be left undefined). */
  bool needs_grad(size_t i) const;
  /** Number of op inputs (ops such as cat take any number). */
  /** Number of tensor inputs of the op call (ops with optional inputs take a varying number). */
  size_t num_inputs() const;

 private:
  const OpNode& node_;
  std::span<const Tensor> grads_;
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
};

/** Register the rule of op (raises RuntimeError on a duplicate). */
void define_rule(std::string_view op, GradRule rule);
/** The rule of op, or null when it has none (every rule family registers on first use). */
const GradRule* find_rule(std::string_view op);

/** Per-family registration, called once by find_rule. */
void register_elementwise_rules();
void register_reduce_rules();
void register_matmul_rules();
void register_copy_rules();
void register_shape_rules();
void register_index_rules();
void register_sort_rules();
void register_nn_rules();

/** The backward node of one recorded op call. */
class OpNode : public Node {
 public:
  /** Edges and saved inputs come from inputs as they are now (before an in-place write). */
  OpNode(const GradRule& rule, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
         std::vector<MetaSym> output_metas);
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_saved() override;
  /** Save input i (or a stand-in with its value, for an in-place op that overwrites it). */
  void save_input(size_t i, const Tensor& t) { saved_inputs_[i] = SavedTensor(t); }
  /** Save output i. */
  void save_output(size_t i, const Tensor& t) { saved_outputs_[i] = SavedTensor(t, static_cast<int>(i)); }
  /** Replace the name (wrappers whose PyTorch node name depends on the call, e.g. CloneBackward0). */
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  friend class GradContext;
  const GradRule& rule_;
  std::string name_;
  std::vector<SavedTensor> saved_inputs_;
  std::vector<SavedTensor> saved_outputs_;
  std::vector<Scalar> scalars_;
  AttrsSym attrs_;
  std::vector<MetaSym> input_metas_;
  std::vector<MetaSym> output_metas_;
};

/** A node whose backward is a function of the gradient (views, view replays). */
class FunctionNode : public Node {
 public:
  using Fn = std::function<Tensor(const Tensor&)>;
  FunctionNode(std::string name, Fn fn) : Node(1), name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;

 private:
  std::string name_;
  Fn fn_;
};

/** A FunctionNode with one next edge. */
std::shared_ptr<Node> make_view_node(std::string name, FunctionNode::Fn fn, Edge next);

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
/** Binary op by name on two tensors. */
Tensor binary(std::string_view op, const Tensor& a, const Tensor& b);
/** Binary op by name with a number (add_scalar, ...). */
Tensor binary(std::string_view op, const Tensor& a, Scalar b);
/** Unary op by name. */
Tensor unary(std::string_view op, const Tensor& x);
/** where(cond, a, b) (not recorded). */
Tensor choose(const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace rill::autograd
