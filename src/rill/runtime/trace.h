// The actors' timeline (RILL_GRAPH_TRACE=file.json): every kernel an actor runs,
// written as a Chrome trace-event file like the VM's (vm/trace.h). See Note
// [The actors' trace] in trace.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rill::runtime::trace {

/** One kernel run of an actor, as its thread records it. */
struct KernelEvent {
  int32_t actor = 0;   // index in the runtime's tasks
  int64_t piece = 0;   // which piece of the iteration the act computed
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tid = 0;     // the OS thread that ran it
};

/** How a trace names one runtime's tasks; its events share it, so recording copies no strings. */
struct TaskLabels {
  std::string graph;               // the job's name (nn.Graph subclass), or "" for a runtime built by hand
  std::vector<std::string> names;  // per task: its name (the op's in the job)
  std::vector<std::string> ops;    // per task: its op type, or its kind ("copy", "acc") for a task without one
  std::vector<std::string> ids;    // per task: task_id_str of its id
};

/** The file RILL_GRAPH_TRACE names, or nullopt: a runtime built while it is set records its kernels. */
std::optional<std::string> path_from_env();

/** The calling thread's OS id (registered once per thread with its name, for the trace's thread names). */
int64_t this_thread_id();

/** Add one iteration's events (one thread's buffer; cleared) to the process's trace, to be written at exit or
 * by write(). */
void add(const std::shared_ptr<const TaskLabels>& labels, int64_t iteration, std::vector<KernelEvent>& events);

/** Write every event recorded so far to the RILL_GRAPH_TRACE file (the whole file again; the process's exit
 * writes it too); returns the number of events written, 0 when nothing records. Raises if it can't write. */
int64_t write();

/** Events recorded so far in this process (for tests). */
int64_t recorded();

}  // namespace rill::runtime::trace
