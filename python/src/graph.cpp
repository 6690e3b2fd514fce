// Graph mode's bindings (python/rill/nn/graph.py): the tracer that records build() into a job, and the
// compiled graph that launches its plan (src/rill/graph/, src/rill/runtime/compiled_graph.h).
#include "bind.h"  // Python.h first

#include <nanobind/stl/unique_ptr.h>

#include "rill/core/sbp.h"
#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"
#include "rill/graph/separate.h"
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
// (ranks, group, mesh, dim_groups): Note [Meshes] in core/sbp.h.
nb::tuple placement_tuple(const graph::Placement& p) {
  return nb::make_tuple(graph::placement_ranks(p), p.group(), std::vector<int64_t>(p.mesh().begin(), p.mesh().end()),
                        std::vector<int64_t>(p.dim_groups().begin(), p.dim_groups().end()));
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
    if (c.has_placement()) op["placement"] = graph::placement_ranks(c.placement());
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

template <typename M>
graph::OnArena<M> parsed(nb::bytes data, const char* what) {
  graph::OnArena<M> m;
  RILL_CHECK(m->ParseFromArray(data.c_str(), static_cast<int>(data.size())), Value, "[nn.Graph] the bytes are not "
             "a serialized ", what);
  return m;
}

std::vector<int64_t> ids(const google::protobuf::RepeatedField<int64_t>& r) { return {r.begin(), r.end()}; }

// A plan as Python data (g.plan()): its tasks, registers, mem blocks and chunks with their ids.
nb::dict plan_dict(const plan::Plan& p) {
  nb::list tasks, regsts, blocks, chunks;
  for (const plan::Task& t : p.tasks()) {
    nb::dict d;
    d["id"] = t.id();
    d["kind"] = graph::task_kind_name(t.kind());
    d["name"] = t.name();
    d["op"] = t.op();
    d["in_regsts"] = ids(t.in_regsts());
    d["out_regsts"] = ids(t.out_regsts());
    d["acts_per_iteration"] = t.acts_per_iteration();
    tasks.append(d);
  }
  for (const plan::Regst& r : p.regsts()) {
    nb::dict d;
    d["id"] = r.id();
    d["kind"] = plan::RegstKind_Name(r.kind());
    d["lbn"] = r.lbn();
    d["producer"] = r.producer();
    d["consumers"] = ids(r.consumers());
    d["count"] = r.count();
    d["desc"] = desc_dict(r.desc());
    d["mem_block_id"] = r.mem_block_id();
    d["mem_offset"] = r.mem_offset();
    d["alias_of"] = r.alias_of();
    regsts.append(d);
  }
  for (const plan::MemBlock& b : p.mem_blocks()) {
    nb::dict d;
    d["id"] = b.id();
    d["chunk_id"] = b.chunk_id();
    d["offset"] = b.offset();
    d["size"] = b.size();
    blocks.append(d);
  }
  for (const plan::Chunk& c : p.chunks()) {
    nb::dict d;
    d["id"] = c.id();
    d["size"] = c.size();
    chunks.append(d);
  }
  nb::dict out;
  out["rank"] = p.rank();
  out["pieces"] = p.pieces();
  out["tasks"] = tasks;
  out["regsts"] = regsts;
  out["mem_blocks"] = blocks;
  out["chunks"] = chunks;
  return out;
}

// A job and a rank's part as Python objects (move-only C++ values; a part is taken when loaded).
struct JobHandle {
  explicit JobHandle(graph::ArenaJob j) : job(std::move(j)) {}
  graph::Job& get() const {
    RILL_CHECK(job.has_value(), Value, "[nn.Graph] this job was compiled in place already");
    return **job;
  }
  /** The job itself, for a compile in place: the handle is empty after. */
  graph::ArenaJob take() {
    get();
    graph::ArenaJob out = std::move(*job);
    job.reset();
    return out;
  }
  std::optional<graph::ArenaJob> job;
};

struct PartHandle {
  explicit PartHandle(graph::RankPart p) : part(std::move(p)) {}
  const graph::RankPart& get() const {
    RILL_CHECK(part.has_value(), Value, "[nn.Graph] this part was loaded into a graph already");
    return *part;
  }
  std::optional<graph::RankPart> part;
};

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
      .def("set_stage_placement", &Tracer::set_stage_placement, nb::arg("stage"), nb::arg("ranks"), nb::arg("group"),
           nb::arg("mesh") = std::vector<int64_t>{}, nb::arg("dim_groups") = std::vector<int64_t>{})
      .def("add_output", &Tracer::add_output)
      .def("variables", &Tracer::variables)
      .def("finish_compile", [](Tracer& t, bool train, int32_t accumulation, const std::vector<std::string>& disabled,
                                bool ssp) {
        graph::ArenaJob job = t.finish(train, accumulation);
        for (const std::string& d : disabled) job->mutable_conf()->add_disabled_passes(d);
        job->mutable_conf()->set_ssp(ssp);
        return std::make_unique<JobHandle>(std::move(job));
      }, nb::arg("train"), nb::arg("gradient_accumulation_steps"), nb::arg("disabled_passes") = std::vector<std::string>{},
         nb::arg("ssp") = false,
         "Finish the trace into the job to compile (rill.graph compiles it, in this process or over the ranks).")
      .def("load", [](Tracer& t, PartHandle& part) {
        RILL_CHECK(part.part.has_value(), Value, "[nn.Graph] this part was loaded already");
        graph::RankPart p = std::move(*part.part);
        part.part.reset();
        auto g = std::make_unique<CompiledGraph>(std::move(p), t.variables(), t.random_numbers());
        g->use_traced_numbers(t.random_start());
        return g;
      }, "The compiled graph that runs part, this rank's part of the traced job, on the trace's variables (the part "
         "is taken).")
      .def("finish_job", [](Tracer& t) { return job_dict(*t.finish(false, 1)); },
           "Finish the trace of an inference step and return the job as Python data, uncompiled (rill.onnx).");
  nb::class_<JobHandle>(m, "_GraphJob", "A traced job on its way to the ranks' plans (src/rill/graph/separate.h).")
      .def_prop_ro("is_global", [](const JobHandle& j) { return j.get().conf().global(); })
      .def("make_logical", [](JobHandle& j) {
        const double start = graph::thread_cpu_seconds();
        graph::make_logical(j.get());
        return graph::thread_cpu_seconds() - start;
      }, "The logical passes and the task table, in place; returns the CPU seconds they took.")
      .def("compile_rank", [](JobHandle& j, int64_t rank, bool take) {
        return std::make_unique<PartHandle>(take ? graph::compile_rank(j.take(), rank)
                                                 : graph::compile_rank(j.get(), rank));
      }, nb::arg("rank"), nb::arg("take") = false,
         "Rank rank's part of this logical job (its passes, inference, plan); take: compile the job itself, not a "
         "copy (the handle is empty after).")
      .def("compile", [](JobHandle& j) { return std::make_unique<PartHandle>(graph::compile_job(j.take())); }, "Both halves in place, for rank 0 (the job is taken).")
      .def("to_bytes", [](const JobHandle& j) { return serialized(j.get()); })
      .def_static("parse", [](nb::bytes data) { return std::make_unique<JobHandle>(parsed<graph::Job>(data, "job")); });
  nb::class_<PartHandle>(m, "_GraphPart", "One rank's part of a job: its job and plan (src/rill/graph/separate.h).")
      .def_prop_ro("compile_cpu_s", [](const PartHandle& p) { return p.get().compile_cpu_s; })
      .def("job_bytes", [](const PartHandle& p) { return serialized(*p.get().job); })
      .def("plan_bytes", [](const PartHandle& p) { return serialized(*p.get().plan); })
      .def("plan_dict", [](const PartHandle& p) { return plan_dict(*p.get().plan); })
      .def_static("parse", [](nb::bytes job, nb::bytes plan) {
        graph::RankPart part;
        part.job = parsed<graph::Job>(job, "job");
        part.plan = parsed<plan::Plan>(plan, "plan");
        return std::make_unique<PartHandle>(std::move(part));
      });
  nb::class_<CompiledGraph>(m, "_CompiledGraph", "A compiled job and its actor runtime.")
      .def("launch", [](CompiledGraph& g, const std::vector<Tensor>& inputs) { return g.launch(inputs); },
           "One iteration; returns the outputs at once (one VM instruction).")
      .def("job_str", [](const CompiledGraph& g) { return graph::job_str(g.job()); })
      .def("plan_str", [](const CompiledGraph& g) { return graph::plan_str(g.plan()); })
      .def("job_bytes", [](const CompiledGraph& g) { return serialized(g.job()); })
      .def("plan_bytes", [](const CompiledGraph& g) { return serialized(g.plan()); })
      .def("plan_dict", [](const CompiledGraph& g) { return plan_dict(g.plan()); })
      .def("job_dict", [](const CompiledGraph& g) { return job_dict(g.job()); })
      .def("global_outputs", [](const CompiledGraph& g) -> nb::object {
        const graph::JobConf& conf = g.job().conf();
        if (!conf.global()) return nb::none();
        nb::list outputs;
        for (int i = 0; i < conf.output_placements_size(); ++i)
          outputs.append(nb::make_tuple(placement_tuple(conf.output_placements(i)), conf.output_sbps(i)));
        return nb::make_tuple(outputs, std::vector<int32_t>(conf.bound_outputs().begin(), conf.bound_outputs().end()));
      }, "A global graph's outputs ([((ranks, group, mesh, dim_groups), sbp)] by output index, and the indices this "
         "rank binds), or None.")

      .def("stats", [](const CompiledGraph& g) {
        runtime::GraphStats s = g.stats();
        runtime::RuntimeStats r = g.runtime().stats();
        nb::dict d;
        d["job_ops"] = s.job_ops;
        d["infer_computed"] = s.infer_computed;
        d["infer_cache_hits"] = s.infer_cache_hits;
        d["compile_s"] = s.compile_s;
        d["compile_cpu_s"] = s.compile_cpu_s;
        d["plan_bytes"] = s.plan_bytes;
        d["plan_tasks"] = s.plan_tasks;
        d["planned_peak_bytes"] = s.planned_peak_bytes;
        d["memory_lower_bound_bytes"] = s.memory_lower_bound_bytes;
        d["fused_kernels"] = s.fused_kernels;
        d["fused_ops"] = s.fused_ops;
        d["launches"] = s.launches;
        d["actor_acts"] = r.acts;
        d["actor_messages"] = r.messages;
        return d;
      })
      .def("ssp", [](const CompiledGraph& g) {
        nb::list out;
        for (const runtime::SspRecord& r : g.runtime().ssp()) {
          nb::dict d;
          d["variable"] = r.variable;
          d["stage"] = r.stage;
          d["bound"] = r.bound;
          d["staleness"] = r.staleness;
          d["max_staleness"] = r.max_staleness;
          out.append(d);
        }
        return out;
      }, "The SSP proxies' records (runtime.h: SspRecord); call it after a sync point.");
  m.def("_make_global", [](const Tensor& local, const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks,
                           int64_t group, const std::string& sbp, const std::vector<int64_t>& mesh,
                           const std::vector<int64_t>& dim_groups) {
    GlobalInfo info{ranks, group, parse_nd(sbp), {}, local, mesh, dim_groups};
    const size_t dims = std::max<size_t>(1, mesh.size());
    RILL_CHECK(info.sbp.size() == dims, Value, "[to_global] a placement of ", dims, " dims needs ", dims,
               " SBPs, got ", info.sbp.size(), " (", sbp, ")");
    return make_global(make_contiguous_meta(shape, local.dtype(), local.device()), std::move(info));
  }, nb::arg("local"), nb::arg("shape"), nb::arg("ranks"), nb::arg("group"), nb::arg("sbp"),
        nb::arg("mesh") = std::vector<int64_t>{}, nb::arg("dim_groups") = std::vector<int64_t>{},
        "A global tensor of logical shape over ranks (a mesh: Note [Meshes] in core/sbp.h) whose local tensor on "
        "this rank is local.");
  m.def("_become", [](nb::handle dst, const Tensor& src) {
    RILL_CHECK(nb::isinstance<Tensor>(dst), Type, "[_become] expected a Tensor");
    *nb::inst_ptr<Tensor>(dst) = src;
  }, "dst (a Tensor object: a module's Parameter) refers to src's tensor from now on, as PyTorch's dst.data = src: "
     "whoever holds dst (an optimizer) sees src.");
  m.def("_global_info", [](const Tensor& t) -> nb::object {
    const GlobalInfo* g = global_info(t);
    if (g == nullptr) return nb::none();
    return nb::make_tuple(g->ranks, g->group, nd_str(g->sbp), g->local, g->mesh, g->dim_groups);
  }, "(ranks, group, sbp, local, mesh, dim_groups) of a global tensor, or None.");
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
