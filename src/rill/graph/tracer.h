// Tracing nn.Graph.build into a job (DESIGN.md §6): the tracer is eager's trace
// sink (Note [Tracing] in eager/trace.h), so every op build() issues, the
// gradient rules backward() runs and the optimizer's update become op confs.
// See Note [Tracing memory] in tracer.cpp for how tensors become blobs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/core/sbp.h"
#include "rill/eager/trace.h"
#include "rill/graph/job.h"

namespace rill::graph {

/** Records one trace of build() (one thread, between start() and finish()). */
class Tracer final : public eager::TraceSink {
 public:
  explicit Tracer(std::string job_name);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /** Install on the calling thread: from now on its ops are traced. */
  void start();
  /** Uninstall (idempotent); tensors made by the trace are poisoned so that reading one later raises. */
  void stop();
  /** t (an eager tensor) is the graph's next input; with gradient accumulation t is one micro-batch of an input
   * of pieces times its dim 0. */
  void add_input(const Tensor& t, int64_t pieces = 1);
  /** The variable t becomes, if build reads it, is called name (a parameter's path, an optimizer state's). */
  void name_variable(const Tensor& t, std::string name);
  /** Ops traced from now on belong to scope ("forward", "backward", "optimizer"). */
  void set_scope(std::string scope);
  /** Pipeline stage `stage` runs on ranks (whose collectives use process group `group`). */
  void set_stage_placement(int32_t stage, const std::vector<int64_t>& ranks, int64_t group,
                           const std::vector<int64_t>& mesh = {}, const std::vector<int64_t>& dim_groups = {});
  /** t is the graph's next output. */
  void add_output(const Tensor& t);
  /** The job: the traced ops (output descs as traced), then an assign for every variable build wrote. Stops
   * the trace. */
  ArenaJob finish(bool train, int32_t gradient_accumulation_steps);
  /** The eager tensors the job's variable ops bind, in binding order. */
  const std::vector<Tensor>& variables() const { return variables_; }
  /** How many random numbers the trace drew: each launch advances the generator by as many. */
  int64_t random_numbers() const { return random_numbers_; }
  /** The generator's offset when the trace started: its draws are the numbers from there on. */
  int64_t random_start() const { return random_start_; }

  void on_call(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars, AttrsSym attrs,
               std::span<const Tensor> outputs) override;
  void on_write(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                AttrsSym attrs, const Tensor& out) override;
  void on_view(const OpSchema& op, const Tensor& x, AttrsSym attrs, const Tensor& y) override;
  void on_sync(const Tensor& t, const char* what) override;

 private:
  enum class Origin : uint8_t { kTraced, kVariable, kInput };
  // The memory of one storage: its whole tensor (root) and the blob holding root's current value.
  struct Memory {
    Tensor root;
    std::string lbn;
    uint32_t version = 0;  // writes traced into it
    Origin origin = Origin::kTraced;
    std::string bound_lbn;  // the blob of its first value (a variable's or an input's op)
  };
  // A tensor the trace has seen: its blob as of a version of its memory, and how it was made from its parent.
  struct Seen {
    std::string lbn;
    uint32_t version = 0;
    Tensor parent;                 // a view's input; undefined for a root
    const OpSchema* op = nullptr;  // the view op
    AttrsSym attrs;
  };

  std::string resolve(const Tensor& t);
  /** Whether writing op(inputs) into the whole of out is a copy of a traced value of out's meta (Note [A copy is
   * its source's blob] in tracer.cpp). */
  bool copies_blob(const OpSchema& op, std::span<const Tensor> inputs, const Tensor& out);
  /** Record out as a tensor of the trace's own memory whose value is the blob lbn. */
  void made_by_trace(const Tensor& out, const std::string& lbn);
  Memory& memory_of(const Tensor& t);
  OpConf& add_op(const OpSchema& op, std::span<const Tensor> inputs, std::span<const Scalar> scalars,
                 AttrsSym attrs);
  // An op the trace adds itself (a view, made again or first, restride, restride_scatter): one output, out.
  std::string add_made_op(const OpSchema& op, std::initializer_list<std::string> inputs, AttrsSym attrs,
                          const TensorMeta& out);
  std::string output_lbn(OpConf& conf);
  /** The op's stage, the op it is a gradient of, and its number (Note [Stages of a trace] in eager/trace.h). */
  void tag(OpConf& conf);
  /** When t is global: its SBP as conf's attr "sbp", its ranks and group as conf's placement; the job is
   * global. */
  void mark_global(OpConf& conf, const Tensor& t);

  ArenaJob job_;
  std::string scope_ = "forward";
  std::unordered_map<const Storage*, Memory> memory_;
  std::unordered_map<const TensorImpl*, Seen> seen_;
  std::unordered_map<const TensorImpl*, std::string> names_;
  std::vector<Tensor> keep_;       // every tensor seen, alive until the trace ends (their addresses key seen_)
  std::vector<Tensor> variables_;
  std::vector<std::string> traced_;  // the names of the ops tag() numbered, in order (number k at k - 1)
  int inputs_ = 0, outputs_ = 0;
  int64_t random_start_ = 0, random_numbers_ = 0;
  int64_t next_op_ = 0;
  bool installed_ = false;
  eager::TraceSink* previous_ = nullptr;
};

}  // namespace rill::graph
