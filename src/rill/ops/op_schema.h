// The op registry (DESIGN.md §1 "One op, few places"). An op is defined once, in
// its family's file under ops/: name, inputs, attrs and its inference function,
// which computes output metas from input metas without touching memory (graph
// mode runs it without kernels). Kernels are looked up per device; the kernels
// layer fills them in at start-up.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/scalar.h"
#include "rill/core/tensor_meta.h"
#include "rill/ops/attrs.h"

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
};

/** Result of inference: output metas and the dtype each input is converted to first. */
struct InferResult {
  std::vector<MetaSym> outputs;
  std::vector<DType> input_dtypes;  // empty: inputs are used as they are
  bool implicit_conversion = false;  // the op converts implicitly: a cached result is re-checked in strict mode
};

/** Shape/dtype inference of an op. Raises rill::Error for bad arguments. */
using InferFn = InferResult (*)(const InferContext&);

/** Definition of one op. */
struct OpSchema {
  std::string name;
  int num_inputs = 0;                  // -1: any number
  int num_scalars = 0;
  std::vector<std::string> attr_names;  // documents and checks the attrs' positions
  InferFn infer = nullptr;
  bool strided_output = false;  // kernel writes outputs of any strides (else outputs are dense)
  KernelFn cpu_kernel = nullptr;
  bool composite = false;  // computed from other ops by the functional layer, so no kernel (e.g. logsumexp)
};

namespace ops {
/** Register every op family's schemas (idempotent, thread-safe). */
void register_all();
/** Add a schema; raises RuntimeError on a duplicate name. */
OpSchema& define(OpSchema schema);
/** Look an op up by name; nullptr when unknown. */
const OpSchema* find(std::string_view name);
/** Look an op up by name; raises RuntimeError when unknown. */
const OpSchema& get(std::string_view name);
/** Every registered op, in registration order. */
std::vector<const OpSchema*> all();
/** Install the CPU kernel of an op (called by the kernels layer). */
void set_cpu_kernel(std::string_view name, KernelFn fn);
/** Inference through the per-thread cache keyed by (op, input metas, scalar kinds, attrs). */
const InferResult& infer_cached(const OpSchema& op, std::span<const MetaSym> inputs,
                                std::span<const Scalar> scalars, AttrsSym attrs);
/** Entries in the calling thread's inference cache (for tests). */
size_t infer_cache_size();
}  // namespace ops

/** Per-family registration functions, called by ops::register_all(). */
void register_elementwise_ops();
void register_reduce_ops();
void register_matmul_ops();
void register_creation_ops();
void register_conv_ops();
void register_pool_ops();
void register_shape_ops();
void register_index_ops();
void register_sort_ops();
void register_nn_ops();

}  // namespace rill
