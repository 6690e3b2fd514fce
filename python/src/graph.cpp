// Graph mode's bindings (python/rill/nn/graph.py): the tracer that records build() into a job, and the
// compiled graph that launches its plan (src/rill/graph/, src/rill/runtime/compiled_graph.h).
#include "bind.h"  // Python.h first

#include <nanobind/stl/unique_ptr.h>

#include "rill/core/sbp.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/graph/tracer.h"
#include "rill/runtime/compiled_graph.h"
#include "rill/runtime/trace.h"

namespace rill::py {
namespace {

nb::object attr_object(const plan::AttrValue& v) {
  switch (v.value_case()) {
    case plan::AttrValue::kB: return nb::bool_(v.b());
    case plan::AttrValue::kI: return nb::int_(v.i());
    case plan::AttrValue::kF: return nb::float_(v.f());
    case plan::AttrValue::kInts: {
      nb::list l;
      for (int64_t e : v.ints().v()) l.append(e);
      return l;
    }
    case plan::AttrValue::kDtype: return nb::str(v.dtype().c_str());
    case plan::AttrValue::kS: return nb::str(v.s().c_str());
    default: return nb::none();
  }
}

nb::object scalar_object(const plan::ScalarValue& v) {
  switch (v.value_case()) {
    case plan::ScalarValue::kB: return nb::bool_(v.b());
    case plan::ScalarValue::kF: return nb::float_(v.f());
    case plan::ScalarValue::kI: return nb::int_(v.i());
    default: return nb::none();
  }
}

nb::dict desc_dict(const plan::TensorDesc& d) {
  nb::dict out;
  out["shape"] = std::vector<int64_t>(d.shape().begin(), d.shape().end());
  out["strides"] = std::vector<int64_t>(d.strides().begin(), d.strides().end());
  out["dtype"] = d.dtype();
  return out;
}

// (ranks, group) of a placement.
nb::tuple placement_tuple(const graph::Placement& p) {
  return nb::make_tuple(std::vector<int64_t>(p.ranks().begin(), p.ranks().end()), p.group());
}

// The job as Python data: what rill.onnx.export maps to ONNX nodes.
nb::dict job_dict(const graph::Job& job) {
  nb::list ops;
  for (const graph::OpConf& c : job.ops()) {
    nb::dict op, attrs;
    op["name"] = c.name();
    op["op_type"] = c.op_type();
    op["inputs"] = std::vector<std::string>(c.inputs().begin(), c.inputs().end());
    op["outputs"] = std::vector<std::string>(c.outputs().begin(), c.outputs().end());
    for (const auto& [name, value] : c.attrs()) attrs[name.c_str()] = attr_object(value);
    op["attrs"] = attrs;
    nb::list scalars, descs;
    for (const plan::ScalarValue& s : c.scalars()) scalars.append(scalar_object(s));
    for (const plan::TensorDesc& d : c.output_descs()) descs.append(desc_dict(d));
    op["scalars"] = scalars;
    op["output_descs"] = descs;
    op["scope"] = c.scope();
    op["loc"] = c.loc();
    if (c.in_sbps_size() + c.out_sbps_size() > 0) {
      op["in_sbps"] = std::vector<std::string>(c.in_sbps().begin(), c.in_sbps().end());
      op["out_sbps"] = std::vector<std::string>(c.out_sbps().begin(), c.out_sbps().end());
    }
    if (c.has_placement()) op["placement"] = std::vector<int64_t>(c.placement().ranks().begin(),
                                                                  c.placement().ranks().end());
    if (c.stage() > 0) op["stage"] = c.stage() - 1;
    ops.append(op);
  }
  nb::dict out;
  out["name"] = job.conf().name();
  out["ops"] = ops;
  out["pass_order"] = std::vector<std::string>(job.conf().pass_order().begin(), job.conf().pass_order().end());
  out["disabled_passes"] =
      std::vector<std::string>(job.conf().disabled_passes().begin(), job.conf().disabled_passes().end());
  nb::list stages;
  for (const graph::Placement& p : job.conf().stages()) stages.append(placement_tuple(p));
  out["global"] = job.conf().global();
  out["stages"] = stages;
  return out;
}

nb::bytes serialized(const google::protobuf::Message& m) {
  std::string s = graph::deterministic_bytes(m);  // equal messages give equal bytes
  return nb::bytes(s.data(), s.size());
}

}  // namespace

void init_graph(nb::module_& m) {
  using runtime::CompiledGraph;
  using graph::Tracer;
  runtime::register_graph_ops();
  nb::class_<Tracer>(m, "_GraphTracer", "Records nn.Graph.build into a job (src/rill/graph/tracer.h).")
      .def(nb::init<std::string>())
      .def("start", &Tracer::start)
      .def("stop", &Tracer::stop)
      .def("add_input", &Tracer::add_input, nb::arg("t"), nb::arg("pieces") = 1)
      .def("name_variable", &Tracer::name_variable)
      .def("set_scope", &Tracer::set_scope)
      .def("set_stage_placement", &Tracer::set_stage_placement, nb::arg("stage"), nb::arg("ranks"), nb::arg("group"))
      .def("add_output", &Tracer::add_output)
      .def("variables", &Tracer::variables)
      .def("compile", [](Tracer& t, bool train, int32_t accumulation, const std::vector<std::string>& disabled) {
        graph::ArenaJob job = t.finish(train, accumulation);
        for (const std::string& d : disabled) job->mutable_conf()->add_disabled_passes(d);
        auto g = std::make_unique<CompiledGraph>(std::move(job), t.variables(), t.random_numbers());
        g->use_traced_numbers(t.random_start());
        return g;
      }, nb::arg("train"), nb::arg("gradient_accumulation_steps"), nb::arg("disabled_passes") = std::vector<std::string>{},
         "Finish the trace and compile it: passes, inference, the plan and its runtime.")
      .def("finish_job", [](Tracer& t) { return job_dict(*t.finish(false, 1)); },
           "Finish the trace of an inference step and return the job as Python data, uncompiled (rill.onnx).");
  nb::class_<CompiledGraph>(m, "_CompiledGraph", "A compiled job and its actor runtime.")
      .def("launch", [](CompiledGraph& g, const std::vector<Tensor>& inputs) { return g.launch(inputs); },
           "One iteration; returns the outputs at once (one VM instruction).")
      .def("job_str", [](const CompiledGraph& g) { return graph::job_str(g.job()); })
      .def("plan_str", [](const CompiledGraph& g) { return graph::plan_str(g.plan()); })
      .def("job_bytes", [](const CompiledGraph& g) { return serialized(g.job()); })
      .def("plan_bytes", [](const CompiledGraph& g) { return serialized(g.plan()); })
      .def("job_dict", [](const CompiledGraph& g) { return job_dict(g.job()); })
      .def("global_outputs", [](const CompiledGraph& g) -> nb::object {
        const graph::JobConf& conf = g.job().conf();
        if (!conf.global()) return nb::none();
        nb::list outputs;
        for (int i = 0; i < conf.output_placements_size(); ++i)
          outputs.append(nb::make_tuple(placement_tuple(conf.output_placements(i)), conf.output_sbps(i)));
        return nb::make_tuple(outputs, std::vector<int32_t>(conf.bound_outputs().begin(), conf.bound_outputs().end()));
      }, "A global graph's outputs ([((ranks, group), sbp)] by output index, and the indices this rank binds), or "
         "None.")

      .def("stats", [](const CompiledGraph& g) {
        runtime::GraphStats s = g.stats();
        runtime::RuntimeStats r = g.runtime().stats();
        nb::dict d;
        d["job_ops"] = s.job_ops;
        d["infer_computed"] = s.infer_computed;
        d["infer_cache_hits"] = s.infer_cache_hits;
        d["compile_s"] = s.compile_s;
        d["plan_tasks"] = s.plan_tasks;
        d["planned_peak_bytes"] = s.planned_peak_bytes;
        d["memory_lower_bound_bytes"] = s.memory_lower_bound_bytes;
        d["fused_kernels"] = s.fused_kernels;
        d["fused_ops"] = s.fused_ops;
        d["launches"] = s.launches;
        d["actor_acts"] = r.acts;
        d["actor_messages"] = r.messages;
        return d;
      });
  m.def("_make_global", [](const Tensor& local, const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks,
                           int64_t group, const std::string& sbp) {
    GlobalInfo info{ranks, group, {Sbp::parse(sbp)}, {}, local};
    return make_global(make_contiguous_meta(shape, local.dtype(), local.device()), std::move(info));
  }, nb::arg("local"), nb::arg("shape"), nb::arg("ranks"), nb::arg("group"), nb::arg("sbp"),
        "A global tensor of logical shape over ranks whose local tensor on this rank is local (core/sbp.h).");
  m.def("_become", [](nb::handle dst, const Tensor& src) {
    RILL_CHECK(nb::isinstance<Tensor>(dst), Type, "[_become] expected a Tensor");
    *nb::inst_ptr<Tensor>(dst) = src;
  }, "dst (a Tensor object: a module's Parameter) refers to src's tensor from now on, as PyTorch's dst.data = src: "
     "whoever holds dst (an optimizer) sees src.");
  m.def("_global_info", [](const Tensor& t) -> nb::object {
    const GlobalInfo* g = global_info(t);
    if (g == nullptr) return nb::none();
    return nb::make_tuple(g->ranks, g->group, g->sbp[0].str(), g->local);
  }, "(ranks, group, sbp, local) of a global tensor, or None.");
  m.def("_is_global_storage", [](const Tensor& t) { return t.storage()->global() != nullptr; },
        "Whether t is a global tensor or a view of one.");
  m.def("_tracing", [] { return eager::trace_sink() != nullptr; }, "Whether this thread is tracing a graph's build().");
  m.def("_set_trace_stage", &eager::set_trace_stage, nb::arg("stage"),
        "Set the thread's trace stage (1 + a pipeline stage id, 0: none); returns the previous one.");
  m.def("_graph_optional_passes", &graph::optional_passes,
        "The job passes nn.Graph's config can turn off (GraphConfig.enable_pass), in their order.");
  m.def("_graph_trace_write", &runtime::trace::write,
        "Write the actors' events so far to the RILL_GRAPH_TRACE file; returns how many (0 when it is unset).");
  m.def("_graph_job_roundtrip", [](nb::bytes data) {
    graph::Job job;
    RILL_CHECK(job.ParseFromArray(data.c_str(), static_cast<int>(data.size())), Value, "[nn.Graph] not a job");
    return nb::make_tuple(serialized(job), graph::job_str(job));
  }, "Parse a serialized job and serialize it again (for the round-trip test), with its text.");
}

}  // namespace rill::py
