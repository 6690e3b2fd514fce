// Process-level controls: memory statistics, intra-op threads, env knob
// overrides, synchronisation and introspection counters.
#include <nanobind/stl/map.h>

#include "bind.h"
#include "rill/core/allocator.h"
#include "rill/ops/op_schema.h"
#include "rill/util/env.h"
#include "rill/util/parallel.h"
#include "rill/vm/virtual_machine.h"

namespace rill::py {

void init_runtime(nb::module_& m) {
  m.def("memory_stats", []() {
    AllocatorStats s = cpu_allocator::stats();
    std::map<std::string, int64_t> out = {
        {"allocated_bytes", s.allocated_bytes}, {"peak_allocated_bytes", s.peak_allocated_bytes},
        {"reserved_bytes", s.reserved_bytes},   {"num_allocs", s.num_allocs},
        {"num_frees", s.num_frees},             {"num_cache_hits", s.num_cache_hits},
        {"num_system_allocs", s.num_system_allocs}};
    return out;
  }, "Counters of the CPU caching allocator.");
  m.def("empty_cache", &cpu_allocator::empty_cache, "Return cached CPU blocks to the system.");
  m.def("reset_peak_memory_stats", &cpu_allocator::reset_peak, "Reset peak_allocated_bytes to the current value.");
  m.def("set_num_threads", &parallel::set_num_threads, nb::arg("n"), "Threads used by CPU kernels.");
  m.def("get_num_threads", &parallel::num_threads, "Threads used by CPU kernels.");
  m.def("set_env_override", [](const std::string& name, std::optional<std::string> value) {
    RILL_CHECK(name.rfind("RILL_", 0) == 0, Value, "[set_env_override] knob names start with RILL_, got ", name);
    env::set_override(name, value);
  }, nb::arg("name"), nb::arg("value").none(), "Override a RILL_* knob at run time (None removes the override).");
  m.def("_env_string", [](const std::string& name) { return env::get_string(name.c_str()); }, nb::arg("name"),
        "A RILL_* knob's text (override, else environment), or None.");
  m.def("env_knobs", []() {
    nb::list out;
    for (const env::Knob& k : env::knobs()) out.append(nb::make_tuple(k.name, k.default_value, k.help));
    return out;
  }, "(name, default, help) of every RILL_* knob.");
  m.def("_infer_cache_size", &ops::infer_cache_size);
  m.def("_num_instructions", &vm::num_submitted);
  m.def("_meta_table_size", []() { return MetaSym::table_size(); });
  m.def("_op_names", []() {
    std::vector<std::string> names;
    for (const OpSchema* s : ops::all()) names.push_back(s->name);
    return names;
  });
}

}  // namespace rill::py
