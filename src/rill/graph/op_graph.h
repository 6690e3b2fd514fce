// The op graph of a job (private to graph/): who produces each logical blob, who
// consumes each op's outputs and control, and which part of an iteration an op
// runs in (Note [Pieces and the once part] in op_graph.cpp). The passes and the
// compiler rebuild it after each rewrite; a job stays the one source of truth. A graph
// reads the job's strings in place: it must not outlive a rename of an op or an output.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rill/graph/job.pb.h"
#include "rill/ops/op_schema.h"

namespace rill::graph {

/** The graph-only op types of job.proto, and the scope whose ops run once per iteration. */
inline constexpr std::string_view kVariable = "variable";
inline constexpr std::string_view kInput = "input";
inline constexpr std::string_view kOutput = "output";
inline constexpr std::string_view kAssign = "assign";
inline constexpr std::string_view kTick = "tick";
inline constexpr std::string_view kRepeat = "repeat";
inline constexpr std::string_view kAcc = "acc";
inline constexpr std::string_view kOptimizerScope = "optimizer";
/** The schema op the compiler makes a TASK_DELAY of (rill.experimental.delay_tick). */
inline constexpr std::string_view kDelayTick = "_delay_tick";
/** The schema op the compiler makes a TASK_SSP_PROXY of (the ssp pass adds it). */
inline constexpr std::string_view kSspProxy = "_ssp_variable_proxy";

/** Whether op_type is one of the graph-only ops of job.proto (not an op schema). */
bool is_graph_only(std::string_view op_type);
/** Whether the op becomes no task, only a register (variables and inputs). */
bool is_binding_op(const OpConf& op);
/** The op's schema (kernels registered), or null for a graph-only op; raises naming the op when unknown. */
const OpSchema* schema_of(const OpConf& op);
/** m serialized deterministically (map entries in key order): equal messages give equal bytes. */
std::string deterministic_bytes(const google::protobuf::MessageLite& m);
/** " (at file:line)" for errors about op, or "" when it has no loc. */
std::string at(const OpConf& op);

/** An int attr of a graph-only op; raises naming the op when it is missing or not an int. */
int64_t int_attr(const OpConf& op, const std::string& name);
/** An optional int attr (fallback when absent). */
int64_t int_attr_or(const OpConf& op, const std::string& name, int64_t fallback);
/** A str attr ("dtype" may be a dtype or a str value); raises naming the op when missing. */
std::string str_attr(const OpConf& op, const std::string& name);

/** The micro-batches per iteration: conf.gradient_accumulation_steps, at least 1. */
int32_t job_pieces(const Job& job);

/** Where a logical blob comes from. */
struct BlobRef {
  int op = -1;   // index into job.ops; -1 when no op produces it
  int out = -1;  // output number
};

/** Producers and consumers of a job's ops, by index into job.ops. */
class OpGraph {
 public:
  /** Index job; raises naming the op for a duplicate op name or output lbn. */
  explicit OpGraph(const Job& job);
  const Job& job() const { return *job_; }
  /** The number of ops when the graph was built (ops added since are not indexed). */
  int size() const { return predecessors_.size(); }
  const OpConf& op(int i) const { return job_->ops(i); }
  /** The op called name, or -1. */
  int find(const std::string& name) const;
  /** The producer of lbn (op -1 when none). */
  BlobRef producer(const std::string& lbn) const;
  /** The producer of op i's input k as it was when the graph was built (op -1 when none): no lookup. */
  BlobRef input_producer(int i, int k) const { return input_producers_[first_input_[i] + k]; }
  /** The outputs of the graph's ops, numbered 0 .. outputs() - 1 in op order: for arrays by output. */
  int outputs() const { return first_output_.back(); }
  /** The number of output out of op (a BlobRef with an op). */
  int output_number(BlobRef b) const { return first_output_[b.op] + b.out; }
  /** Ops reading some output of op i (each once, in job order). */
  std::span<const int> data_consumers(int i) const { return data_consumers_.of(i); }
  /** Ops naming op i in their ctrl_inputs (each once, in job order). */
  std::span<const int> ctrl_consumers(int i) const { return ctrl_consumers_.of(i); }
  /** Producers of op i's data inputs and the ops its ctrl_inputs name (each once; unknown names left out). */
  std::span<const int> predecessors(int i) const { return predecessors_.of(i); }
  /** Marks of every op some op of roots needs, through predecessors (a root itself only if another needs it). */
  std::vector<bool> ancestors(const std::vector<int>& roots) const;
  /** Whether op i is a variable op with attr trainable. */
  bool trainable_variable(int i) const;
  /** The variable op an assign writes (its input 0), or -1 when that is not a variable. */
  int assign_target(int i) const;
  /** Take in the ctrl edges (consumer, producer) a pass added to the job's ops (consumers' ctrl_inputs naming
   * producers, appended in this order): the graph is then the one the job would build, with no string read. */
  void add_ctrl_edges(const std::vector<std::pair<int, int>>& edges);

 private:
  // Note [The op graph's layout]
  // A graph is rebuilt after each rewrite of the job, and a 48-block job has ten thousand ops: building one
  // must touch little memory and allocate little. So the name and lbn indexes are open-addressing tables of
  // views (one array, no node per entry), and each relation is one array of edges with an offset per op
  // (compressed rows), not a vector per op.

  /** string_view -> V by open addressing with linear probing; the table is sized once, at twice the keys. A
   * slot keeps its key as a pointer, a length and 32 bits of its hash, so most probes compare no strings. */
  /** The hash both indexes use for their keys (a graph's build hashes each key once, before probing). */
  static size_t key_hash(std::string_view key) { return std::hash<std::string_view>()(key); }

  template <typename V>
  class StringIndex {
   public:
    void reserve(size_t keys) {
      size_t capacity = 16;
      while (capacity < 2 * keys) capacity *= 2;
      slots_.assign(capacity, Slot{});
    }
    /** Whether key (of hash h) was new (a present key keeps its value). */
    bool insert(std::string_view key, size_t h, V value) {
      for (size_t k = h & mask();; k = (k + 1) & mask()) {
        Slot& s = slots_[k];
        if (s.tag == 0) {
          s = Slot{key.data(), static_cast<uint32_t>(key.size()), tag_of(h), value};
          return true;
        }
        if (s.matches(key, tag_of(h))) return false;
      }
    }
    const V* find(std::string_view key, size_t h) const {
      if (slots_.empty()) return nullptr;
      for (size_t k = h & mask();; k = (k + 1) & mask()) {
        const Slot& s = slots_[k];
        if (s.tag == 0) return nullptr;
        if (s.matches(key, tag_of(h))) return &s.value;
      }
    }
    const V* find(std::string_view key) const { return find(key, key_hash(key)); }
    /** Start loading what find(key of hash h) reads first: its slot. */
    void prefetch_slot(size_t h) const { __builtin_prefetch(&slots_[h & mask()]); }
    /** Start loading what it reads next: the key its slot points to (the slot loaded by now). */
    void prefetch_key(size_t h) const { __builtin_prefetch(slots_[h & mask()].data); }

   private:
    struct Slot {
      const char* data = nullptr;
      uint32_t size = 0;
      uint32_t tag = 0;  // 0: empty
      V value{};
      bool matches(std::string_view key, uint32_t t) const {
        return tag == t && size == key.size() && std::string_view(data, size) == key;
      }
    };
    static uint32_t tag_of(size_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }  // never 0
    size_t mask() const { return slots_.size() - 1; }
    std::vector<Slot> slots_;
  };

  /** Lists of ops per op in one array: op i's are edges[offsets[i], offsets[i + 1]). */
  struct Rows {
    std::vector<int> offsets{0}, edges;
    int size() const { return static_cast<int>(offsets.size()) - 1; }
    std::span<const int> of(int i) const {
      return {edges.data() + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i])};
    }
  };
  /** Rows of n ops from (row, op) pairs, each row keeping the pairs' order. */
  static Rows rows_of(int n, const std::vector<std::pair<int, int>>& pairs);

  const Job* job_;
  // Keys view the job's own strings: a pass may add ops or rewrite inputs while a graph of the job lives, but
  // renames no op and no output (a repeated field holds its messages by pointer, so adding moves none).
  StringIndex<int> by_name_;
  StringIndex<BlobRef> by_lbn_;
  Rows data_consumers_, ctrl_consumers_, predecessors_;
  std::vector<int> first_output_;  // op i's outputs are numbered from first_output_[i]; one more, the total
  std::vector<int> first_input_;   // op i's inputs' producers are input_producers_[first_input_[i] + k]
  std::vector<BlobRef> input_producers_;
};

/** Which part of an iteration an op runs in (Note [Pieces and the once part] in op_graph.cpp). */
enum class Part { kBinding, kPiece, kOnce, kMixed };

/** Whether the op runs once per iteration by its role: an optimizer op, an output, an assign into a trainable
 * variable. */
bool once_by_role(const OpGraph& g, int i);
/** The part of every op of g's job (all kPiece but the bindings when the job has one piece). */
std::vector<Part> op_parts(const OpGraph& g);
/** The same over the job as it is now: ops added after g was built included, and the ctrl edges (consumer,
 * producer) added since, by index. */
std::vector<Part> op_parts(const OpGraph& g, const std::vector<std::pair<int, int>>& added);

/** Op names already used in a job, to make fresh ones: the names g indexes and those the set made. Ops added
 * to the job since g was built must take their names from the set. */
class NameSet {
 public:
  explicit NameSet(const OpGraph& g) : graph_(&g) {}
  /** base, or base-2, base-3, ... : the first not used yet (and now used). */
  std::string fresh(const std::string& base);

 private:
  const OpGraph* graph_;  // its name index: no second set of ten thousand names
  std::unordered_set<std::string> made_;
};

/** A new op at the end of job with one output "<name>/out0" when outputs is 1. */
OpConf* add_op(Job& job, const std::string& name, std::string_view op_type, const std::string& scope,
               int outputs);
/** Reorder job.ops topologically over data and ctrl edges, keeping the present order where it is one; raises
 * naming an op on a cycle. */
void sort_topologically(Job& job);
/** The same, given g (a graph of the job's first g.size() ops) and the ctrl edges (consumer, producer) added to
 * the job since g was built, by index; ops added since come after g's. No graph is built again. */
void sort_topologically(Job& job, const OpGraph& g, const std::vector<std::pair<int, int>>& added);
/** Whether desc is dense and row-major (size-1 dims ignored). */
bool is_row_major(const plan::TensorDesc& desc);
/** Add name to op's ctrl_inputs unless it is there. */
void add_ctrl(OpConf& op, const std::string& name);
/** Whether op is a schema op that views its input (OpFlags::view). */
bool is_view(const OpConf& op);
/** The ops reading variable op v's memory, directly or through views, but skip and the assigns into v. */
std::vector<int> memory_readers(const OpGraph& g, int v, int skip);
/** Rewrite op's inputs by lbn_to and its ctrl_inputs by name_to (ops merged or removed into others), each ctrl
 * name once. */
void redirect(OpConf& op, const std::unordered_map<std::string, std::string>& lbn_to,
              const std::unordered_map<std::string, std::string>& name_to);
/** Remove the ops whose keep flag is false (indices into job.ops). */
void remove_ops(Job& job, const std::vector<bool>& keep);

/** The ranks of a placement, in order (none: on every rank that needs it). */
std::vector<int64_t> placement_ranks(const Placement& p);
/** How many ranks p has. */
int64_t placement_size(const Placement& p);
/** p's ranks become ranks (increasing), written as a range when they are contiguous; its group is left. */
void set_placement_ranks(Placement& p, const std::vector<int64_t>& ranks);
/** Set p's ranks, group, and mesh with its dim groups (Note [Meshes] in core/sbp.h). */
void set_placement(Placement& p, const std::vector<int64_t>& ranks, int64_t group, const std::vector<int64_t>& mesh,
                   const std::vector<int64_t>& dim_groups);

}  // namespace rill::graph
