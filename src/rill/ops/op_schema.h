// The op registry (docs/architecture.md §1 "One op, few places"). An op is defined once, in
// its family's file under ops/: name, inputs, attrs and its inference function,
// which computes output metas from input metas without touching memory (graph
// mode runs it without kernels). Kernels are looked up per device; the kernels
// layer fills them in at start-up.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/scalar.h"
#include "rill/core/tensor_meta.h"
#include "rill/ops/attrs.h"
#include "rill/ops/sbp.h"
#include "rill/ops/signature.h"

namespace rill {

struct OpSchema;

/** A tensor as a kernel sees it: memory (already offset) and meta. */
struct TensorArg {
  void* data;
  const TensorMeta* meta;
  template <typename T>
  T* ptr() const { return static_cast<T*>(data); }
};

/** Everything a kernel receives. */
struct KernelContext {
  const OpSchema& op;
  std::span<const TensorArg> inputs;
  std::span<const TensorArg> outputs;
  const Attrs& attrs;
  std::span<const Scalar> scalars;
  /** The attr called name (Note [Arguments of an op call]). */
  template <typename T>
  const T& attr(std::string_view name) const;
};

/** A kernel: reads inputs, writes outputs. Raises rill::Error on bad data. */
using KernelFn = void (*)(const KernelContext&);

/** What inference sees of an op call. */
struct InferContext {
  const OpSchema& op;
  std::span<const MetaSym> inputs;
  std::span<const Scalar> scalars;
  const Attrs& attrs;
  /** Set by the strict-dtype helpers (type_promotion.h) when the op converts implicitly (Note [Strict dtype
   * mode] in type_promotion.cpp); an output of inference, hence mutable. */
  mutable bool implicit_conversion = false;
  /** The attr called name (Note [Arguments of an op call]). */
  template <typename T>
  const T& attr(std::string_view name) const;
};

/** Result of inference: output metas and the dtype each input is converted to first. */
struct InferResult {
  std::vector<MetaSym> outputs;
  std::vector<DType> input_dtypes;  // empty: inputs are used as they are
  bool implicit_conversion = false;  // the op converts implicitly: a cached result is re-checked in strict mode
  int64_t view_offset = 0;           // a view op's output offset from its input's, in elements
};

/** Shape/dtype inference of an op. Raises rill::Error for bad arguments. */
using InferFn = InferResult (*)(const InferContext&);

/** What an op is, beyond its arguments. */
struct OpFlags {
  bool strided_output = false;  // the kernel writes outputs of any strides (else outputs are dense)
  bool composite = false;       // computed from other ops by the functional layer, so no kernel (logsumexp)
  bool function = false;        // rill.<name> is bound from the signature (python/src/schema_bindings.cpp)
  bool method = false;          // Tensor.<name> too (the first argument is self)
  bool inplace = false;         // Tensor.<name>_ too, writing into self
  bool out = false;             // the bound function takes out= (written without autograd, as in PyTorch)
  bool nn_functional = false;   // rill.nn.functional.<name> too (the function form)
  bool nn_inplace = false;      // ... taking inplace=False, as PyTorch's activations (True: written into input)
  bool differentiable = true;   // false: the outputs never require grad (comparisons, argmax)
  bool view = false;            // the output is a view of input 0 (no kernel: eager::view_call)
  bool random = false;          // draws from the generator: scalars 0 and 1 are its seed and offset (graph mode
                                // gives each launch its own offset; CSE never merges two calls)
  bool updates_in_place = false;  // an optimizer update: each output may be written over the input it updates
                                  // (ops::updated_input), every element read before it is written
  bool elementwise = false;     // one output whose element i reads only element i of each input (broadcast), one
                                // kernel call per any part of it: graph mode may fuse a chain of them
                                // (ops/fused.h), calling the kernel on tiles
  bool collective = false;      // calls the communication library (graph boxing): a graph with one launches on
                                // the comm thread (Note [Graphs that communicate] in runtime/compiled_graph.cpp)
  bool waits_for_peer = false;  // blocks until another rank acts (graph transfers): its task gets a thread of its
                                // own (Note [Graph transfers] in comm/boxing.cpp)
  bool integer_divisor = false;  // the Scalar argument divides: an integer zero raises at the call (the bindings
                                 // check it), not later in the kernel
};

// Note [Arguments of an op call]
// A signature lists an op's arguments once, with names, types and defaults; an op
// call (eager::call, an instruction, a job's op conf) carries them in three lists
// that follow from the types, each in signature order:
//   inputs:  the Tensor and Tensor[] arguments (a Tensor? that is None is left out),
//   scalars: the Scalar arguments (Python numbers, whose kind takes part in promotion); a Scalar? that is
//            None keeps its place as Scalar::none(), which takes no part in promotion, so an op reads each
//            by position (clamp_scalar: scalars[0].is_none() is "no min"),
//   attrs:   everything else (int, int[], float, bool, ScalarType, str), interned; an optional one that is
//            None is std::monostate (optional_attr_of).
// So kernels, inference and gradient rules read an attr by its signature name
// (OpSchema::attr_index, the contexts' attr<T>("dim")), and the Python bindings
// can parse any call from the signature alone.

/** Definition of one op. */
struct OpSchema {
  std::string name;
  Signature signature;
  std::string doc;  // one line: what the op computes
  OpFlags flags;
  std::string overload_of;  // its forms are bound as an overload of the op of this name (Note [Overloads] in
                            // python/src/schema_bindings.cpp); empty: bound under its own name
  int num_inputs = 0;                   // -1: any number (Tensor[] or Tensor? arguments)
  int num_scalars = 0;
  std::vector<std::string> attr_names;  // the attrs' signature names, in order
  InferFn infer = nullptr;
  std::array<KernelFn, kNumDeviceTypes> kernels{};  // per device type; null where the op has no kernel
  SbpFn sbp = nullptr;                  // its SBP signatures (ops/sbp.h); null: elementwise's or broadcast only
  LocalAttrsFn local_attrs = nullptr;   // its attrs on one rank's slices, for an op whose attrs hold sizes
  /** The kernel for a device type, or null. */
  KernelFn kernel(DeviceType t) const { return kernels[static_cast<size_t>(t)]; }
  /** Position of the attr called attr in an op call's attrs; RuntimeError (a bug) when there is none. */
  size_t attr_index(std::string_view attr) const;
  bool strided_output() const { return flags.strided_output; }
  bool composite() const { return flags.composite; }
};

/** The attr called name of an op call, as T (bool, int64_t, double, std::vector<int64_t>, DType, std::string). */
template <typename T>
const T& attr_of(const OpSchema& op, const Attrs& attrs, std::string_view name) {
  return std::get<T>(attrs.values[op.attr_index(name)]);
}
/** The optional attr called name as T, or null when it is None. */
template <typename T>
const T* optional_attr_of(const OpSchema& op, const Attrs& attrs, std::string_view name) {
  return std::get_if<T>(&attrs.values[op.attr_index(name)]);
}
template <typename T>
const T& KernelContext::attr(std::string_view name) const { return attr_of<T>(op, attrs, name); }
template <typename T>
const T& InferContext::attr(std::string_view name) const { return attr_of<T>(op, attrs, name); }

namespace ops {
/** Register every op family's schemas (idempotent, thread-safe). */
void register_all();
/** Define an op from its signature (signature.h) and inference; raises RuntimeError on a duplicate name or a
 * bad signature. */
OpSchema& define(std::string_view signature, InferFn infer, OpFlags flags = {}, std::string_view doc = {});
/** Look an op up by name; nullptr when unknown. */
const OpSchema* find(std::string_view name);
/** Look an op up by name; raises RuntimeError when unknown. */
const OpSchema& get(std::string_view name);
/** Every registered op, in registration order. */
std::vector<const OpSchema*> all();
/** Install an op's kernel for a device type (called by the kernels layer). */
void set_kernel(std::string_view name, DeviceType device, KernelFn fn);
/** set_kernel for the CPU. */
inline void set_cpu_kernel(std::string_view name, KernelFn fn) { set_kernel(name, DeviceType::kCPU, fn); }
/** For an op with OpFlags::updates_in_place called with num_inputs inputs: the input whose memory output may
 * share (param for param', each state for its new value, step for step + 1), or -1. */
int updated_input(const OpSchema& op, int output, int num_inputs);
/** Inference through the per-thread cache keyed by (op, input metas, scalar kinds, attrs). */
const InferResult& infer_cached(const OpSchema& op, std::span<const MetaSym> inputs,
                                std::span<const Scalar> scalars, AttrsSym attrs);
/** Entries in the calling thread's inference cache (for tests). */
size_t infer_cache_size();
}  // namespace ops

/** Per-family registration functions, called by ops::register_all(). */
void register_elementwise_ops();
void register_special_ops();
void register_reduce_ops();
void register_matmul_ops();
void register_creation_ops();
void register_conv_ops();
void register_pool_ops();
void register_shape_ops();
void register_index_ops();
void register_sort_ops();
void register_nn_ops();
void register_view_ops();
void register_comm_ops();
void register_boxing_ops();
void register_optim_ops();
void register_fused_ops();
void register_linalg_ops();
void register_experimental_ops();

}  // namespace rill
