// The autograd layer (docs/architecture.md §5): reverse mode over a graph of backward
// nodes. A recorded op attaches a Node to its outputs; the Node's next edges
// point at the nodes of its inputs (or at an AccumulateGrad for a leaf). The
// engine (engine.h) walks that graph from the roots with in-degree counting.
// Gradient rules (rules.h) are written with the eager functional API, so
// backward runs through the VM exactly like forward.
//
// This header holds the graph's pieces: Edge, hooks, SavedTensor, Node,
// AccumulateGrad, and AutogradMeta, the per-tensor state core/ only forward-declares.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rill/core/tensor.h"

namespace rill::autograd {

class Node;

/** Where a gradient goes: input input_nr of node fn (a null fn: nowhere). */
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

/** A hook on a gradient: returns a replacement, or an undefined tensor to keep the gradient. */
using GradHook = std::function<Tensor(const Tensor&)>;

/** The hooks on one tensor's gradient, in registration order; an id lets a handle remove one. */
struct HookList {
  std::vector<std::pair<int64_t, GradHook>> hooks;
  int64_t next_id = 0;
  /** Add a hook; returns its id. */
  int64_t add(GradHook hook);
  /** Remove the hook with this id (no-op when already removed). */
  void remove(int64_t id);
  /** Run every hook on grad, each seeing the previous one's result. */
  Tensor run(Tensor grad) const;
};

// Note [Version counter]
// Every Storage counts the in-place writes to its memory (Storage::version). The
// autograd entry points that write in place (in-place ops, copy_, fill_, setitem)
// bump it, in or out of grad mode, so all views of a memory block and detach()ed
// aliases share one counter. A SavedTensor records the count when saved and
// compares at unpack: a tensor changed since then would give a wrong gradient, so
// backward raises PyTorch's "modified by an inplace operation" error instead.
// Views also compare it to find a stale grad_fn (Note [Views and in-place]).

/** A tensor kept for backward: an alias of its memory (no autograd state, so no reference cycle through
 * grad_fn) plus the version it had when saved. */
class SavedTensor {
 public:
  SavedTensor() = default;
  /** Save t; output_nr >= 0 marks it as output output_nr of the node that saves it. */
  explicit SavedTensor(const Tensor& t, int output_nr = -1);
  /** The saved tensor; raises if it was modified in place since, or freed by an earlier backward. */
  Tensor unpack(const Node& owner) const;
  /** Free the memory (after a backward that does not retain the graph). */
  void release();
  bool defined() const { return data_.defined() || released_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  int output_nr_ = -1;
  bool released_ = false;
};

/** A backward function: maps the gradients of an op's outputs to the gradients of its inputs. */
class Node : public std::enable_shared_from_this<Node> {
 public:
  /** num_inputs: how many gradients it takes (the forward op's outputs). */
  explicit Node(size_t num_inputs);
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /** PyTorch's name for it, e.g. "AddBackward0". */
  virtual std::string name() const = 0;
  /** grads[i]: gradient of forward output i (undefined: none arrived). Returns one gradient per next edge
   * (undefined: none). */
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  /** Free saved tensors; a later apply that needs them raises PyTorch's "backward a second time" error. */
  virtual void release_saved() {}

  /** Where the gradients apply() returns go, one edge per forward input. */
  std::vector<Edge>& next_edges() { return next_edges_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  /** How many gradients apply() takes. */
  size_t num_inputs() const { return num_inputs_; }
  /** Creation order; the engine runs later nodes first (as PyTorch does). */
  uint64_t sequence_nr() const { return sequence_nr_; }
  /** The number of the traced op it was made for: its gradient ops name it (Note [Stages of a trace]). */
  int64_t traced_op() const { return traced_op_; }
  /** Hooks on the gradient of forward output nr (a non-leaf tensor's hooks), created on demand. */
  std::shared_ptr<HookList>& tensor_hooks(uint32_t nr);
  /** The hooks on gradient nr, or null. */
  const HookList* find_tensor_hooks(uint32_t nr) const;
  /** Make forward output nr store its gradient in meta's grad (retain_grad). */
  void retain_grad(uint32_t nr, const std::shared_ptr<AutogradMeta>& meta);
  /** The state of the tensor that retains gradient nr, or null. */
  std::shared_ptr<AutogradMeta> retained(uint32_t nr) const;

 private:
  std::vector<Edge> next_edges_;
  size_t num_inputs_;
  uint64_t sequence_nr_;
  int64_t traced_op_;
  std::vector<std::shared_ptr<HookList>> tensor_hooks_;
  std::vector<std::weak_ptr<AutogradMeta>> retained_;
};

/** The node a leaf's gradient flows into: adds it to the leaf's .grad. */
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  /** The leaf tensor. */
  Tensor variable() const { return Tensor(leaf_); }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

/** The history of a view whose base was written in place since the view was made: its gradient mapped to the
 * base's by view_to_base (Note [Views and in-place]); graph plumbing, like AccumulateGrad, not an op's rule. */
class ViewOfBase : public Node {
 public:
  explicit ViewOfBase(std::function<Tensor(const Tensor&)> to_base) : Node(1), to_base_(std::move(to_base)) {}
  std::string name() const override { return "AsStridedBackward0"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;

 private:
  std::function<Tensor(const Tensor&)> to_base_;
};

/** A ViewOfBase whose gradient goes to base. */
std::shared_ptr<Node> make_view_of_base_node(std::function<Tensor(const Tensor&)> to_base, Edge base);

/** A tensor sharing x's memory (and version counter) with no history; never requires grad. */
Tensor detach(const Tensor& x);
/** Make x a leaf that does not require grad. */
void detach_(const Tensor& x);

/** Add grad into t's .grad (set it to a copy when it has none). */
void accumulate_grad(const Tensor& t, const Tensor& grad);

// --- per-tensor state -------------------------------------------------------------------

/** t's autograd state, created on first use. */
AutogradMeta& meta_of(const Tensor& t);
/** t's autograd state, or null. */
inline AutogradMeta* find_meta(const Tensor& t) { return t.impl()->autograd_meta(); }
/** t's backward node (null for a leaf); rebuilds a view's node when its memory was written in place since. */
std::shared_ptr<Node> grad_fn(const Tensor& t);
/** True for a tensor without a backward node. */
inline bool is_leaf(const Tensor& t) { return grad_fn(t) == nullptr; }
/** Where t's gradient goes: its grad_fn, its AccumulateGrad (a leaf that requires grad) or nowhere. */
Edge gradient_edge(const Tensor& t);
/** The AccumulateGrad of leaf t (shared while alive, so the graph has one per leaf). */
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
/** Make output nr of node the history of t: t then requires grad and is no longer a leaf. */
void set_history(const Tensor& t, std::shared_ptr<Node> node, uint32_t output_nr);
/** The hooks of t's gradient (a leaf's own list, or its grad_fn's list for its output nr). */
std::shared_ptr<HookList> tensor_hooks(const Tensor& t);
/** Make a non-leaf t keep its gradient in .grad after backward (no-op for a leaf). */
void retain_grad(const Tensor& t);

}  // namespace rill::autograd

namespace rill {

/** A tensor's autograd state (declared in core/tensor.h; only autograd creates or reads it). */
struct AutogradMeta {
  /** Accumulated gradient (.grad); undefined: None. */
  Tensor grad;
  /** The node that produced this tensor; null for a leaf. */
  std::shared_ptr<autograd::Node> grad_fn;
  /** Which output of grad_fn this tensor is. */
  uint32_t output_nr = 0;
  /** A leaf's AccumulateGrad, while some graph holds it. */
  std::weak_ptr<autograd::Node> grad_accumulator;
  /** A leaf's gradient hooks (shared with its AccumulateGrad). */
  std::shared_ptr<autograd::HookList> hooks;
  /** A leaf's hooks called with the leaf once a gradient was added to its .grad (their results are ignored). */
  std::shared_ptr<autograd::HookList> post_accumulate_hooks;
  /** A non-leaf keeps its gradient in grad. */
  bool retains_grad = false;
  // Note [Views and in-place]
  // A view made in grad mode remembers its base (the tensor that is not a view
  // whose memory it shares), how to take the same view of a tensor of the base's
  // shape (view_replay), and how to turn the view's gradient into a gradient of
  // the base (view_to_base). An in-place op on a view changes the base too: the
  // base's history becomes CopySlices (copy.cpp), whose backward runs the in-place
  // op's rule on the viewed region of the base's gradient, and the view's history
  // becomes a node that routes through the base. Other views of the same base
  // find out lazily, as in PyTorch: grad_fn() compares the memory's version with
  // view_version and, when they differ, rebuilds the view's node from the base's
  // current history.
  /** The base of a view; undefined when this tensor is not a view. */
  Tensor view_base;
  /** Takes this view of a tensor shaped like the base. */
  std::function<Tensor(const Tensor&)> view_replay;
  /** Turns a gradient of this view into a gradient of the base. */
  std::function<Tensor(const Tensor&)> view_to_base;
  /** The memory's version when grad_fn was last set. */
  uint32_t view_version = 0;
};

}  // namespace rill
