// Shared pieces of the Python bindings: the dtype caster, argument parsing
// helpers, and the init_xxx(m) functions module.cpp calls, one per C++ area.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rill/autograd/engine.h"
#include "rill/autograd/node.h"
#include "rill/core/tensor.h"
#include "rill/eager/functional.h"

namespace nb = nanobind;

namespace rill::py {

/** The Python object for a dtype (rill.float32, ...). */
struct PyDType {
  DType value;
};

/** Singleton Python object of a dtype. */
nb::handle dtype_object(DType t);
/** dtype from a rill.dtype or the builtins bool/int/float; nullopt if obj is neither. */
std::optional<DType> dtype_from_object(nb::handle obj);

/** A Python number as a Scalar; nullopt for anything else (tensors, strings, ...). */
std::optional<Scalar> scalar_from_object(nb::handle obj);
/** Sizes from f(2, 3), f((2, 3)) or f([2, 3]); TypeError naming op otherwise. */
Shape shape_from_args(const nb::args& args, const char* op);
/** Sizes from f(2, 3), f((2, 3)) or f(name=(2, 3)) (PyTorch's keyword for them); TypeError naming op otherwise. */
Shape sizes_from(const nb::args& args, const nb::kwargs& kwargs, const char* name, const char* op);
/** A list of ints from an int or a sequence of ints; TypeError naming op otherwise. */
std::vector<int64_t> ints_from_object(nb::handle obj, const char* op);
/** A device from None, "cpu" or a rill.device. */
Device device_from_object(nb::handle obj, const char* op);

/** Wait (GIL released, Ctrl-C raises KeyboardInterrupt) until t can be read; raises if t is poisoned. */
void wait_readable(const Tensor& t);
/** Read t's only element into dst (16 bytes, aligned): a reused SyncRead, or at once when t is ready. */
void read_element(const Tensor& t, void* dst);
/** Wait (GIL released, interruptible) for every issued op; raises the first unreported kernel error. */
void synchronize();
/** Wait (GIL released, interruptible) for every issued op, leaving kernel errors to the next sync point. */
void wait_all();

// --- binary ops (ops.cpp), shared by the areas that bind them ---------------------------
/** The schemas behind one binary op name: tensor-tensor, tensor-number and number-tensor. */
struct BinaryOp {
  std::string name;
  const OpSchema* tensor;
  const OpSchema* scalar = nullptr;   // null: the other operand must be a tensor
  const OpSchema* rscalar = nullptr;  // null: no number-first form (comparisons: Python reflects them)
};
/** The schemas of name (numbers: name_scalar; reversible: rname_scalar too). */
BinaryOp make_binary(const std::string& name, bool numbers = true, bool reversible = true);
/** a op other (reverse: other op a); nullopt when other is neither a tensor nor an accepted number. */
std::optional<Tensor> try_binary(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse);
/** a op other (reverse: other op a); TypeError for any other operand. */
Tensor binary(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse = false);
/** A Python operator: NotImplemented (so Python tries the other operand) for an operand it can't take. */
nb::object binary_operator(const BinaryOp& op, const Tensor& a, nb::handle other, bool reverse);
/** a op= other, written into a (PyTorch's overlap checks first). */
const Tensor& binary_inplace(const BinaryOp& op, const Tensor& a, nb::handle other);
/** a op other written into out (out=; no autograd, as in PyTorch); returns out. */
const Tensor& binary_out(const BinaryOp& op, const Tensor& a, nb::handle other, const Tensor& out);
/** Tensor's operators for op: dunder (a op b), rdunder (b op a) and idunder (a op= b); rill.<name> and the
 * methods come from the signatures. */
void def_operators(nb::class_<Tensor>& cls, const BinaryOp& op, const char* dunder, const char* rdunder,
                   const char* idunder);
/** RuntimeError for a number operand s of a op whose error is known before the kernel runs: an integer zero
 * divisor (OpFlags::integer_divisor), an integer tensor to a negative integer power (pow). */
void check_number_operand(const OpSchema& op, const Tensor& a, const Scalar& s);
/** RuntimeError unless every element of out has its own memory (an in-place op writes each once). */
void check_no_internal_overlap(const Tensor& out, const std::string& op);
/** RuntimeError when in shares some but not all of out's memory (PyTorch's rule for in-place inputs). */
void check_no_partial_overlap(const Tensor& out, const Tensor& in, const std::string& op);

/** Point Tensor's + - * / slots straight at the binary ops (Note [Operator slots]); after every def. */
void install_number_slots(nb::class_<Tensor>& cls);
/** Set the Python exception for a rill error (TypeError, ValueError, ... by its kind). */
void set_python_error(const Error& e);

/** The named tuple type of name's results, fields separated by spaces ("values indices"), made once per name and
 * exported as rill.return_types.<name> (Note [Named outputs] in schema_bindings.cpp). */
nb::handle return_type(const std::string& name, const std::string& fields);

/** Submodule initialisers, one per C++ area. */
void init_dtype(nb::module_& m);
void init_tensor(nb::module_& m);
void init_indexing(nb::class_<Tensor>& cls);
void init_interop(nb::module_& m, nb::class_<Tensor>& cls);
void init_ops(nb::module_& m, nb::class_<Tensor>& cls);
void init_shape(nb::module_& m, nb::class_<Tensor>& cls);
void init_math_ops(nb::module_& m, nb::class_<Tensor>& cls);
void init_autograd(nb::module_& m, nb::class_<Tensor>& cls);
/** rill.<op>, Tensor.<op>, Tensor.<op>_ of every op whose flags ask for them (Note [Bindings from signatures]). */
void init_schema_bindings(nb::module_& m, nb::class_<Tensor>& cls);
void init_runtime(nb::module_& m);
void init_vm(nb::module_& m);
void init_odb(nb::module_& m);
void init_nn(nb::module_& m);
void init_nn_functional(nb::module_& m);
void init_distributed(nb::module_& m);
void init_graph(nb::module_& m);

}  // namespace rill::py

namespace nanobind::detail {
/** rill::DType <-> rill.dtype objects (also accepts bool, int, float). */
template <>
struct type_caster<rill::DType> {
  NB_TYPE_CASTER(rill::DType, const_name("rill.dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    auto t = rill::py::dtype_from_object(src);
    if (!t) return false;
    value = *t;
    return true;
  }
  static handle from_cpp(rill::DType t, rv_policy, cleanup_list*) noexcept {
    return rill::py::dtype_object(t).inc_ref();
  }
};
}  // namespace nanobind::detail
