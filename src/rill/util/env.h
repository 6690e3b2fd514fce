// Every RILL_* knob is read here (docs/architecture.md §3.10). Values come from a run-time
// override table (set from tests through rill._C.set_env_override) or else the
// process environment; nothing is frozen at first read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rill::env {

/** Description of one knob, for the README table and `rill.env_knobs()`. */
struct Knob {
  const char* name;
  const char* default_value;
  const char* help;
};

/** All knobs rill reads. */
const std::vector<Knob>& knobs();

/** Integer value of a knob: override, else environment, else fallback. Bad text raises ValueError. */
int64_t get_int(const char* name, int64_t fallback);

/** Text of a knob: override, else environment, else nullopt (an empty value counts as unset). */
std::optional<std::string> get_string(const char* name);

/** Boolean value of a knob ("1/true/on" or "0/false/off"). */
bool get_bool(const char* name, bool fallback);

/** Override a knob at run time; std::nullopt removes the override. */
void set_override(const std::string& name, std::optional<std::string> value);

/** Bumped on every override change, so hot-path caches can notice. */
uint64_t generation();

}  // namespace rill::env
