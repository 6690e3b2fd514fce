// Autograd: Tensor.requires_grad/grad/grad_fn/is_leaf/..., backward nodes as
// Python objects, hooks, grad mode, and the engine entry points that
// rill.autograd.backward / rill.autograd.grad call.
#include <nanobind/stl/shared_ptr.h>

#include <sstream>

#include "bind.h"
#include "rill/autograd/engine.h"
#include "rill/autograd/node.h"
#include "rill/eager/autocast.h"

namespace rill::py {
namespace {

namespace ag = rill::autograd;

// A Python callable owned from C++. The last owner may be a VM thread dropping a tensor (and with it a
// node and its hooks), so the reference is released under the GIL.
class PyCallable {
 public:
  explicit PyCallable(nb::handle fn) : fn_(fn.inc_ref().ptr()) {}
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable() {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // the interpreter is going away: leak
    nb::gil_scoped_acquire gil;
    Py_DECREF(fn_);
  }
  nb::handle get() const { return fn_; }

 private:
  PyObject* fn_;
};

// A gradient hook calling fn(grad): None keeps the gradient, a Tensor replaces it.
ag::GradHook python_hook(nb::handle fn) {
  auto callable = std::make_shared<PyCallable>(fn);
  return [callable](const Tensor& grad) -> Tensor {
    nb::gil_scoped_acquire gil;
    nb::object r = callable->get()(grad);
    if (r.is_none()) return Tensor();
    RILL_CHECK(nb::isinstance<Tensor>(r), Type, "[register_hook] a hook must return None or a Tensor, got ",
               nb::inst_name(r).c_str());
    return nb::cast<Tensor>(r);
  };
}

/** What register_hook returns: removes its hook (once the hook list is gone, nothing to do). */
struct HookHandle {
  std::weak_ptr<ag::HookList> list;
  int64_t id;
  void remove() const {
    if (auto l = list.lock()) l->remove(id);
  }
};

std::vector<Tensor> tensors_or_undefined(const std::vector<std::optional<Tensor>>& in) {
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const auto& t : in) out.push_back(t ? *t : Tensor());
  return out;
}

nb::object grad_fn_object(const std::shared_ptr<ag::Node>& fn) {
  if (!fn) return nb::none();
  return nb::cast(fn);
}

// The backward node of a rill.autograd.Function call: backward(*grads) runs the Function's Python backward
// (python/rill/autograd/function.py) and returns one gradient (or None) per forward argument, which the
// node passes on along its edges (one per argument; none for an argument that is not a Tensor or does not
// require grad).
class PyFunctionNode : public ag::Node {
 public:
  PyFunctionNode(nb::handle backward, std::string name, size_t num_outputs)
      : ag::Node(num_outputs), backward_(std::make_shared<PyCallable>(backward)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    RILL_CHECK(backward_ != nullptr, Runtime, "Trying to backward through the graph a second time (or directly "
               "access saved tensors after they have already been freed). Saved intermediate values of the graph "
               "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
               "backward through the graph a second time or if you need to access saved tensors after calling "
               "backward.");
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Tensor& g : grads) args.append(g.defined() ? nb::cast(g) : nb::none());
    nb::object r = backward_->get()(*args);
    std::vector<Tensor> out(next_edges().size());
    nb::sequence results = nb::borrow<nb::sequence>(r);
    RILL_CHECK(nb::len(results) == out.size(), Runtime, "[", name_, "] backward gave ", nb::len(results),
               " gradients for ", out.size(), " inputs");
    for (size_t i = 0; i < out.size(); ++i) {
      nb::object g = results[i];
      if (!g.is_none()) out[i] = nb::cast<Tensor>(g);
    }
    return out;
  }
  // The backward closure holds the Function's ctx and its saved tensors: dropped after a backward that does not
  // retain the graph, as PyTorch frees saved tensors.
  void release_saved() override { backward_.reset(); }

 private:
  std::shared_ptr<PyCallable> backward_;
  std::string name_;
};

}  // namespace

void init_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  m.def("_function_apply", [](nb::handle backward, const std::string& name,
                              const std::vector<std::optional<Tensor>>& inputs, const std::vector<Tensor>& outputs) {
    auto node = std::make_shared<PyFunctionNode>(backward, name, outputs.size());
    for (const auto& t : inputs) node->next_edges().push_back(t ? ag::gradient_edge(*t) : ag::Edge{});
    for (size_t i = 0; i < outputs.size(); ++i) ag::set_history(outputs[i], node, static_cast<uint32_t>(i));
  }, nb::arg("backward"), nb::arg("name"), nb::arg("inputs"), nb::arg("outputs"),
     "Attach a rill.autograd.Function's backward node to its outputs (python/rill/autograd/function.py).");
  nb::class_<ag::Node>(m, "Node", "A backward function of the autograd graph (Tensor.grad_fn).")
      .def("name", &ag::Node::name, "PyTorch's name of the node, e.g. 'AddBackward0'.")
      .def_prop_ro("next_functions", [](const ag::Node& n) {
        nb::list out;
        for (const ag::Edge& e : n.next_edges()) out.append(nb::make_tuple(grad_fn_object(e.fn), e.input_nr));
        return nb::tuple(out);
      }, "((node or None, input_nr), ...): where the gradients of this node's inputs go.")
      .def_prop_ro("variable", [](const ag::Node& n) -> nb::object {
        if (auto* acc = dynamic_cast<const ag::AccumulateGrad*>(&n)) return nb::cast(acc->variable());
        RILL_FAIL(Type, "[variable] only an AccumulateGrad node has a variable, this is ", n.name());
      }, "The leaf tensor of an AccumulateGrad node.")
      .def("__repr__", [](const ag::Node& n) {
        std::ostringstream os;
        os << "<" << n.name() << " object at " << static_cast<const void*>(&n) << ">";
        return os.str();
      });

  nb::class_<HookHandle>(m, "_HookHandle", "Returned by register_hook; remove() takes the hook off.")
      .def("remove", &HookHandle::remove)
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](const HookHandle& h, nb::args) { h.remove(); });

  cls.def_prop_rw("requires_grad", [](const Tensor& t) { return t.impl()->requires_grad(); },
                  [](Tensor& t, bool v) {
                    if (!ag::is_leaf(t)) {
                      RILL_CHECK(v, Runtime, "you can only change requires_grad flags of leaf variables. If you want "
                                 "to use a computed variable in a subgraph that doesn't require differentiation use "
                                 "var_no_grad = var.detach().");
                      return;
                    }
                    RILL_CHECK(!v || dtype_is_floating(t.dtype()), Runtime,
                               "only Tensors of floating point dtype can require gradients, got ",
                               dtype_name(t.dtype()));
                    t.impl()->set_requires_grad(v);
                  })
      .def_prop_rw("grad", [](const Tensor& t) -> nb::object {
            AutogradMeta* m = ag::find_meta(t);
            if (!m || !m->grad.defined()) return nb::none();
            return nb::cast(m->grad);
          },
          [](Tensor& t, std::optional<Tensor> g) {
            if (!g) {
              if (AutogradMeta* m = ag::find_meta(t)) m->grad = Tensor();
              return;
            }
            RILL_CHECK(g->shape() == t.shape(), Runtime, "attempting to assign a gradient of size '",
                       shape_str(g->shape()), "' to a tensor of size '", shape_str(t.shape()),
                       "'. Please ensure that the gradient and the tensor are the same size");
            RILL_CHECK(g->dtype() == t.dtype(), Runtime, "attempting to assign a gradient with dtype '",
                       dtype_name(g->dtype()), "' to a tensor with dtype '", dtype_name(t.dtype()),
                       "'. Please ensure that the gradient and the tensor have the same dtype");
            ag::meta_of(t).grad = *g;
          }, nb::arg("value").none(), "The gradient accumulated by backward(), or None.")
      .def_prop_ro("grad_fn", [](const Tensor& t) { return grad_fn_object(ag::grad_fn(t)); },
                   "The node that produced this tensor, or None for a leaf.")
      .def_prop_ro("is_leaf", [](const Tensor& t) { return ag::is_leaf(t); })
      .def_prop_ro("retains_grad", [](const Tensor& t) {
            AutogradMeta* m = ag::find_meta(t);
            return m && m->retains_grad && !ag::is_leaf(t);
          })
      .def_prop_ro("_version", [](const Tensor& t) { return t.storage()->version(); },
                   "In-place writes to this tensor's memory so far.")
      .def_prop_ro("data", [](const Tensor& t) { return ag::detach(t); }, "This tensor's values, detached.")
      .def("detach", [](const Tensor& t) { return ag::detach(t); },
           "A tensor sharing this one's memory, outside the autograd graph.")
      .def("detach_", [](const Tensor& t) -> const Tensor& {
            ag::detach_(t);
            return t;
          }, nb::rv_policy::reference_internal)
      .def_prop_ro("_storage_numel", [](const Tensor& t) {
            return static_cast<int64_t>(t.storage()->nbytes() / dtype_itemsize(t.dtype()));
          }, "How many elements of this tensor's dtype its memory holds.")
      .def("_become", [](Tensor& self, const Tensor& view) -> Tensor& {
            // An in-place view method (squeeze_, t_, ...): this Python object now holds the view, a new
            // tensor with its own meta and grad_fn; instructions already issued keep the old one.
            self = view;
            return self;
          }, nb::arg("view"), nb::rv_policy::none,
           "Make this tensor object refer to view (a view of it): the in-place view methods.")
      .def("retain_grad", [](const Tensor& t) { ag::retain_grad(t); },
           "Keep this non-leaf tensor's gradient in .grad after backward.")
      .def_static("_make_subclass", [](nb::handle type, const Tensor& data, bool requires_grad) {
            // An instance of a Python subclass of Tensor (rill.nn.Parameter) that shares data's memory as a
            // new leaf, as torch.Tensor._make_subclass does.
            RILL_CHECK(PyType_Check(type.ptr()) &&
                       PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()),
                                        reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())),
                       Type, "[_make_subclass] expected a subclass of rill.Tensor");
            RILL_CHECK(!requires_grad || dtype_is_floating(data.dtype()), Runtime,
                       "only Tensors of floating point dtype can require gradients, got ", dtype_name(data.dtype()));
            nb::object inst = nb::inst_alloc(type);
            Tensor* t = nb::inst_ptr<Tensor>(inst);
            new (t) Tensor(ag::detach(data));
            nb::inst_mark_ready(inst);
            if (requires_grad) t->impl()->set_requires_grad(true);
            return inst;
          }, nb::arg("cls"), nb::arg("data"), nb::arg("requires_grad") = false,
          "A new leaf of type cls (a Tensor subclass) sharing data's memory.")
      .def("_register_hook", [](const Tensor& t, nb::handle fn) {
            RILL_CHECK(t.impl()->requires_grad(), Runtime,
                       "cannot register a hook on a tensor that doesn't require gradient");
            std::shared_ptr<ag::HookList> list = ag::tensor_hooks(t);
            int64_t id = list->add(python_hook(fn));
            return HookHandle{list, id};
          })
      .def_prop_ro("_impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); },
                   "The identity of the tensor object behind this Python one (two wrappers of one tensor agree).")
      .def("register_post_accumulate_grad_hook", [](const Tensor& t, nb::handle fn) {
            RILL_CHECK(t.impl()->requires_grad() && ag::is_leaf(t), Runtime,
                       "post accumulate grad hooks cannot be registered on non-leaf tensors or tensors that don't "
                       "require gradient");
            std::shared_ptr<ag::HookList>& list = ag::meta_of(t).post_accumulate_hooks;
            if (!list) list = std::make_shared<ag::HookList>();
            int64_t id = list->add(python_hook(fn));
            return HookHandle{list, id};
          }, nb::arg("hook"), "Call hook(tensor) after a backward added a gradient into this leaf's .grad.");

  m.def("is_grad_enabled", &eager::grad_enabled, "True when ops record the autograd graph on this thread.");
  m.def("_set_grad_enabled", &eager::set_grad_enabled, nb::arg("mode"));
  m.def("_autocast_state", []() {
    const eager::AutocastState& s = eager::autocast_state();
    return std::make_pair(s.enabled, s.dtype);
  }, "(enabled, dtype) of CPU autocast on this thread (Note [Autocast]).");
  m.def("_set_autocast_state", [](bool enabled, DType dtype) { eager::set_autocast_state({enabled, dtype}); },
        nb::arg("enabled"), nb::arg("dtype"));
  m.def("_set_anomaly_mode", &ag::set_anomaly_mode, nb::arg("enabled"), nb::arg("check_nan"),
        "Anomaly mode: NaN gradients raise, naming the node (rill.autograd.set_detect_anomaly).");
  m.def("_anomaly_mode", []() { return std::make_pair(ag::anomaly_enabled(), ag::anomaly_check_nan()); });
  m.def("_run_backward", [](const std::vector<Tensor>& tensors, const std::vector<std::optional<Tensor>>& grads,
                            bool retain_graph, const std::vector<Tensor>& inputs, bool create_graph) {
    ag::backward(tensors, tensors_or_undefined(grads), retain_graph, inputs, create_graph);
  }, nb::arg("tensors"), nb::arg("grad_tensors"), nb::arg("retain_graph"), nb::arg("inputs"),
     nb::arg("create_graph") = false);
  m.def("_run_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                        const std::vector<std::optional<Tensor>>& grad_outputs, bool retain_graph, bool allow_unused,
                        bool create_graph) {
    std::vector<Tensor> got = ag::grad(outputs, inputs, tensors_or_undefined(grad_outputs), retain_graph,
                                       allow_unused, create_graph);
    nb::list out;
    for (const Tensor& g : got) out.append(g.defined() ? nb::cast(g) : nb::none());
    return nb::tuple(out);
  }, nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs"), nb::arg("retain_graph"),
     nb::arg("allow_unused"), nb::arg("create_graph") = false);
}

}  // namespace rill::py
