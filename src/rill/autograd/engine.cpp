#include "rill/autograd/engine.h"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "rill/eager/autocast.h"
#include "rill/eager/grad_mode.h"
#include "rill/autograd/node.h"
#include "rill/eager/functional.h"
#include "rill/eager/math.h"
#include "rill/eager/trace.h"
#include "rill/ops/type_promotion.h"

namespace rill::autograd {
namespace {

thread_local bool t_creating_graph = false;
std::atomic<bool> g_anomaly{false}, g_anomaly_check_nan{true};

// Anomaly mode: raise PyTorch's error when a node returns a NaN gradient (a sync per gradient: debugging only).
void check_no_nan(const Node& n, const std::vector<Tensor>& outs) {
  static const OpSchema& any = eager::op("any");
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!outs[j].defined() || !dtype_is_floating(outs[j].dtype())) continue;
    eager::GradModeGuard off(false);
    Tensor flag = eager::reduce(any, eager::ne(outs[j], outs[j]), {}, false);
    eager::wait_readable(flag);
    RILL_CHECK(!*static_cast<const bool*>(flag.data_ptr()), Runtime, "Function '", n.name(),
               "' returned nan values in its ", j, "th output.");
  }
}

// A gradient the caller asked for: what arrives at input input_nr of node, stored at index.
struct Capture {
  Node* node;
  uint32_t input_nr;
  size_t index;
};

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// Edges and gradients of the roots, checked as PyTorch checks them.
void make_roots(std::span<const Tensor> tensors, std::span<const Tensor> grads, std::vector<Edge>& edges,
                std::vector<Tensor>& root_grads) {
  RILL_CHECK(grads.empty() || grads.size() == tensors.size(), Runtime, "[backward] got ", tensors.size(),
             " tensors and ", grads.size(), " gradients; pass one gradient (or None) per tensor");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    RILL_CHECK(t.impl()->requires_grad(), Runtime, "element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      RILL_CHECK(t.numel() == 1, Runtime, "grad can be implicitly created only for scalar outputs");
      g = eager::full(t.shape(), Scalar(int64_t{1}), t.dtype());
    } else {
      RILL_CHECK(g.shape() == t.shape(), Runtime, "Mismatch in shape: grad_output[", i, "] has a shape of rill.Size(",
                 shape_str(g.shape()), ") and output[", i, "] has a shape of rill.Size(", shape_str(t.shape()), ").");
      g = eager::to_dtype(g, t.dtype());
    }
    edges.push_back(gradient_edge(t));
    root_grads.push_back(std::move(g));
  }
}

std::vector<Capture> make_captures(std::span<const Tensor> inputs, std::vector<Edge>& keep_alive) {
  std::vector<Capture> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RILL_CHECK(inputs[i].impl()->requires_grad(), Runtime, "One of the differentiated Tensors does not require grad");
    Edge e = gradient_edge(inputs[i]);
    captures.push_back({e.fn.get(), e.input_nr, i});
    keep_alive.push_back(std::move(e));
  }
  return captures;
}

// Runs the graph below roots. With captures, only nodes that lead to a captured gradient run and no
// AccumulateGrad does; the captured gradients are returned.
std::vector<Tensor> run(const std::vector<Edge>& roots, std::vector<Tensor> root_grads, bool keep_graph,
                        const std::vector<Capture>& captures, bool create_graph) {
  // Recording on only for create_graph: the rules' ops then become the graph of the gradients.
  eager::GradModeGuard grad_mode(create_graph);
  struct CreatingGraph {
    bool previous = t_creating_graph;
    explicit CreatingGraph(bool on) { t_creating_graph = on; }
    ~CreatingGraph() { t_creating_graph = previous; }
  } creating(create_graph);
  // Gradient rules are rill's own code: the conversions they make (a gradient brought back to its input's
  // dtype) are not the user's, so strict dtype mode does not apply to them.
  StrictDtypeGuard not_strict(false);
  // 1. Every reachable node and its in-degree.
  std::unordered_map<Node*, int> deps;
  std::vector<std::shared_ptr<Node>> nodes;  // keeps every node alive while the run uses raw pointers
  std::vector<Node*> stack;
  auto visit = [&](const Edge& e) {
    if (!e.valid()) return;
    auto [it, fresh] = deps.try_emplace(e.fn.get(), 0);
    ++it->second;
    if (fresh) {
      nodes.push_back(e.fn);
      stack.push_back(e.fn.get());
    }
  };
  for (const Edge& e : roots) visit(e);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) visit(e);
  }

  // 2. With captures: which nodes lead to one (children before parents, by an iterative post-order walk).
  std::unordered_map<Node*, bool> needed;
  if (!captures.empty()) {
    std::unordered_set<Node*> targets;
    for (const Capture& c : captures) targets.insert(c.node);
    std::vector<std::pair<Node*, size_t>> walk;
    std::unordered_set<Node*> entered;
    for (const Edge& r : roots) {
      if (!r.valid() || !entered.insert(r.fn.get()).second) continue;
      walk.emplace_back(r.fn.get(), 0);
      while (!walk.empty()) {
        auto& [n, next] = walk.back();
        const auto& edges = n->next_edges();
        if (next < edges.size()) {
          Node* child = edges[next++].fn.get();
          if (child && entered.insert(child).second) walk.emplace_back(child, 0);
          continue;
        }
        bool need = false;
        for (const Edge& e : edges)
          if (e.valid()) need |= targets.count(e.fn.get()) > 0 || needed[e.fn.get()];
        needed[n] = need;
        walk.pop_back();
      }
    }
  }

  // 3. Run nodes as their gradients complete.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  auto deliver = [&](const Edge& e, Tensor g) {
    std::vector<Tensor>& buf = buffers[e.fn.get()];
    if (buf.empty()) buf.resize(e.fn->num_inputs());
    if (g.defined()) buf[e.input_nr] = buf[e.input_nr].defined() ? eager::add(buf[e.input_nr], g) : std::move(g);
    if (--deps[e.fn.get()] == 0) ready.push(e.fn.get());
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) deliver(roots[i], root_grads[i]);

  std::vector<Tensor> captured(captures.size());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->num_inputs());
    bool any = false;
    for (uint32_t nr = 0; nr < grads.size(); ++nr) {
      if (!grads[nr].defined()) continue;
      if (const HookList* hooks = n->find_tensor_hooks(nr)) grads[nr] = hooks->run(grads[nr]);
      if (auto m = n->retained(nr)) m->grad = m->grad.defined() ? eager::add(m->grad, grads[nr]) : eager::clone(grads[nr]);
      any = true;
    }
    for (const Capture& c : captures)
      if (c.node == n) captured[c.index] = grads[c.input_nr];
    if (!captures.empty() && !needed[n]) continue;
    std::vector<Tensor> outs;
    if (any) {
      const int64_t grad_of = eager::set_trace_grad_of(n->traced_op());  // Note [Stages of a trace]
      try {
        outs = n->apply(std::move(grads));
      } catch (...) {
        eager::set_trace_grad_of(grad_of);
        throw;
      }
      eager::set_trace_grad_of(grad_of);
      if (g_anomaly.load(std::memory_order_relaxed) && g_anomaly_check_nan.load(std::memory_order_relaxed))
        check_no_nan(*n, outs);
      if (!keep_graph) n->release_saved();
    }
    const auto& edges = n->next_edges();
    for (size_t j = 0; j < edges.size(); ++j)
      if (edges[j].valid()) deliver(edges[j], j < outs.size() ? outs[j] : Tensor());
  }
  return captured;
}

}  // namespace

bool creating_graph() { return t_creating_graph; }

void set_anomaly_mode(bool enabled, bool check_nan) {
  g_anomaly.store(enabled);
  g_anomaly_check_nan.store(check_nan);
}
bool anomaly_enabled() { return g_anomaly.load(); }
bool anomaly_check_nan() { return g_anomaly_check_nan.load(); }

void backward(std::span<const Tensor> tensors, std::span<const Tensor> grads, bool retain_graph,
              std::span<const Tensor> inputs, bool create_graph) {
  eager::AutocastGuard no_autocast({});  // Note [Autocast]: backward ops keep the forward's dtypes
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  make_roots(tensors, grads, roots, root_grads);
  if (inputs.empty()) {
    run(roots, std::move(root_grads), retain_graph, {}, create_graph);
    return;
  }
  std::vector<Edge> keep_alive;
  std::vector<Capture> captures = make_captures(inputs, keep_alive);
  std::vector<Tensor> got = run(roots, std::move(root_grads), retain_graph, captures, create_graph);
  eager::GradModeGuard grad_mode(create_graph);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (got[i].defined()) accumulate_grad(inputs[i], got[i]);
}

std::vector<Tensor> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                         std::span<const Tensor> grad_outputs, bool retain_graph, bool allow_unused,
                         bool create_graph) {
  eager::AutocastGuard no_autocast({});  // Note [Autocast]: backward ops keep the forward's dtypes
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  make_roots(outputs, grad_outputs, roots, root_grads);
  std::vector<Edge> keep_alive;
  std::vector<Capture> captures = make_captures(inputs, keep_alive);
  std::vector<Tensor> got = run(roots, std::move(root_grads), retain_graph, captures, create_graph);
  for (size_t i = 0; i < got.size(); ++i)
    RILL_CHECK(got[i].defined() || allow_unused, Runtime, "The differentiated Tensor at index ", i,
               " appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.");
  return got;
}

}  // namespace rill::autograd
