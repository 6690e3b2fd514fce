#include "rill/ops/type_promotion.h"

#include <atomic>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "rill/util/env.h"

namespace rill {
namespace {

using Opt = std::optional<DType>;

Opt promote_opt(Opt a, Opt b) {
  if (!a) return b;
  if (!b) return a;
  return promote_types(*a, *b);
}

// Combine the result of a higher-priority tier with a lower one: the lower tier
// counts only when it is of a higher category.
Opt combine_categories(Opt higher, Opt lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (dtype_is_floating(*higher)) return higher;
  if (*higher == DType::kBool || dtype_is_floating(*lower)) return promote_types(*higher, *lower);
  if (dtype_is_integral(*higher) && *lower == DType::kBool) return higher;
  return higher;
}

}  // namespace

DType result_type(std::span<const MetaSym> tensors, std::span<const Scalar> scalars) {
  Opt dim_result, zero_result, wrapped_result;
  for (const MetaSym& m : tensors) {
    if (m->ndim() > 0) {
      dim_result = promote_opt(dim_result, m->dtype);
    } else {
      zero_result = promote_opt(zero_result, m->dtype);
    }
  }
  for (const Scalar& s : scalars)
    if (!s.is_none()) wrapped_result = promote_opt(wrapped_result, s.default_dtype());  // None takes no part
  Opt r = combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
  return r ? *r : default_float();
}

// Note [Strict dtype mode]
// Under strict dtype mode (rill.set_strict_dtype, rill.strict_dtype(), RILL_STRICT_DTYPE=1) every implicit
// conversion raises TypeError. The check lives where inference computes a result dtype from operand dtypes
// (result_type_checked, to_floating_checked), so eager mode and graph tracing, which run the same inference,
// both honour it. It costs nothing on the common path: the flag is read only on the branch where promotion
// converts something (operands of different dtypes, a number of a higher category, an integer made float).
//
// Inference results are cached (Note [Inference cache] in registry.cpp) under a key that does not hold the
// flag, so a result inferred with strict mode off must not let a strict call through. The helpers therefore
// mark the InferContext (implicit_conversion); the cache stores the mark with the result, and a hit on a
// marked result re-runs inference when strict mode is on, which raises.
//
// What counts as a conversion: tensor operands of different dtypes (0-dim ones included); an int
// or bool input made floating (true division, sqrt, exp, logsumexp); a Python number of a higher category
// than the tensors (a float with an int tensor, an int with a bool tensor); a value stored into a tensor of
// another dtype (in-place ops, copy_, x[i] = v, out=). Not conversions: explicit .to() / dtype= arguments,
// arguments whose dtype an op's contract fixes (int64 class targets, bool masks, int64 gather indices, any /
// all reading their input as bool), comparisons' bool results, integer sums widening to int64 (sum of a
// bool mask counts it), and Python numbers of the tensor's category or a lower one (2 with a float tensor,
// True with an int tensor).
namespace {

// -1: the thread follows the process default; 0 / 1: set on this thread.
thread_local int t_strict = -1;

// The process default, cached with the env generation it was read at, so reading it costs two atomic
// loads unless an override changed (docs/architecture.md §3.10: knobs are not frozen at first read).
std::atomic<uint64_t> g_default_generation{~uint64_t{0}};
std::atomic<bool> g_default{false};

bool process_default() {
  uint64_t gen = env::generation();
  if (g_default_generation.load(std::memory_order_acquire) != gen) {
    g_default.store(env::get_bool("RILL_STRICT_DTYPE", false), std::memory_order_relaxed);
    g_default_generation.store(gen, std::memory_order_release);
  }
  return g_default.load(std::memory_order_relaxed);
}

std::string rill_dtype(DType t) { return "rill." + std::string(dtype_name(t)); }

const char* number_kind(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kBool: return "a Python bool";
    case Scalar::Kind::kInt: return "a Python int";
    case Scalar::Kind::kFloat: return "a Python float";
    case Scalar::Kind::kNone: return "None";
  }
  return "a Python number";
}

int category(DType t) { return t == DType::kBool ? 0 : dtype_is_floating(t) ? 2 : 1; }
int category(const Scalar& s) { return static_cast<int>(s.kind()); }

// The argument name of input i of op, as PyTorch's signatures spell it.
std::string input_name(const OpSchema& op, size_t i, size_t n) {
  const std::string& name = op.name;
  auto pick = [&](std::initializer_list<const char*> names) -> std::string {
    return i < names.size() ? names.begin()[i] : "inputs[" + std::to_string(i) + "]";
  };
  if (name == "where") return pick({"condition", "input", "other"});
  if (name == "addcmul" || name == "addcdiv") return pick({"input", "tensor1", "tensor2"});
  if (name == "clamp") return pick({"input", "min", "max"});
  if (name == "clamp_min") return pick({"input", "min"});
  if (name == "clamp_max") return pick({"input", "max"});
  if (name == "lerp" || name == "lerp_scalar") return pick({"input", "end", "weight"});
  if (name == "cat") return "tensors[" + std::to_string(i) + "]";
  if (n <= 2) return pick({"input", "other"});
  return "inputs[" + std::to_string(i) + "]";
}

// rsub_scalar and friends: the number comes first (2 - x).
bool number_first(const OpSchema& op) {
  const std::string& n = op.name;
  return n.size() > 8 && n[0] == 'r' && n.ends_with("_scalar") && ops::find(n.substr(1)) != nullptr;
}

[[noreturn]] void fail_operands(const InferContext& c, std::span<const MetaSym> tensors,
                                std::span<const Scalar> scalars, DType result) {
  std::vector<std::string> parts;
  for (const MetaSym& m : tensors) parts.emplace_back(dtype_name(m->dtype));
  std::vector<std::string> numbers;
  for (const Scalar& s : scalars)
    if (!s.is_none()) numbers.emplace_back(number_kind(s));
  if (number_first(c.op)) {
    numbers.insert(numbers.end(), parts.begin(), parts.end());
    parts = numbers;
  } else {
    parts.insert(parts.end(), numbers.begin(), numbers.end());
  }
  std::ostringstream os;
  for (size_t i = 0; i < parts.size(); ++i) os << (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") << parts[i];
  // Where tensors sit in the op's inputs (where() checks its inputs after the condition).
  const bool inside = std::less_equal<const MetaSym*>()(c.inputs.data(), tensors.data()) &&
                      std::less<const MetaSym*>()(tensors.data(), c.inputs.data() + c.inputs.size());
  const size_t offset = inside ? static_cast<size_t>(tensors.data() - c.inputs.data()) : 0;
  std::string fix;
  for (size_t j = 0; j < tensors.size(); ++j) {
    if (tensors[j]->dtype == result) continue;
    fix += (fix.empty() ? "" : " and ") + input_name(c.op, offset + j, c.inputs.size()) + ".to(" +
           rill_dtype(result) + ")";
  }
  std::string number_fix;
  for (const Scalar& s : scalars) {
    if (number_fix.empty() && !tensors.empty() && !s.is_none() && category(s) > category(tensors[0]->dtype))
      number_fix = category(tensors[0]->dtype) == 0 ? "a bool number" : "an int number";
  }
  if (!number_fix.empty()) fix += ", or pass " + number_fix;
  RILL_FAIL(Type, "[", c.op.name, "] strict dtype mode: operands are ", os.str(), "; convert explicitly, e.g. ", fix);
}

}  // namespace

int strict_dtype_setting() { return t_strict; }
void set_strict_dtype_setting(int setting) { t_strict = setting < 0 ? -1 : setting > 0 ? 1 : 0; }
bool strict_dtype() { return t_strict >= 0 ? t_strict == 1 : process_default(); }

DType result_type_checked(const InferContext& c, std::span<const MetaSym> tensors, std::span<const Scalar> scalars) {
  DType result = result_type(tensors, scalars);
  // A number of a higher category than the tensors changes the result dtype, so one comparison per tensor
  // finds every conversion.
  bool converts = false;
  for (const MetaSym& m : tensors) converts |= m->dtype != result;
  if (!converts) [[likely]]
    return result;
  c.implicit_conversion = true;
  if (strict_dtype()) fail_operands(c, tensors, scalars, result);
  return result;
}

DType to_floating_checked(const InferContext& c, DType t) {
  if (dtype_is_floating(t)) [[likely]]
    return t;
  c.implicit_conversion = true;
  if (strict_dtype()) {
    const DType f = to_floating(t);
    const bool one = c.inputs.size() == 1;
    const bool division = c.op.name == "div" || c.op.name == "div_scalar" || c.op.name == "rdiv_scalar";
    RILL_FAIL(Type, "[", c.op.name, "] strict dtype mode: ", one ? "an " : "", dtype_name(t),
              one ? " input gives a " : " operands give a ", dtype_name(f), " result; convert explicitly, e.g. ",
              one || c.op.name != "div" ? "input" : "input.to(" + std::string(rill_dtype(f)) + ") and other", ".to(",
              rill_dtype(f), ")", division ? ", or use floor_divide (//) for an integer result" : "");
  }
  return to_floating(t);
}

void check_strict_store(std::string_view op, DType value, DType dest, std::string_view what,
                        std::string_view fix) {
  if (value == dest || !strict_dtype()) return;
  if (fix.empty())
    RILL_FAIL(Type, "[", op, "] strict dtype mode: ", what, " is ", dtype_name(value), " and the written-to tensor is ",
              dtype_name(dest), "; convert the operands explicitly with .to(", rill_dtype(dest), ")");
  RILL_FAIL(Type, "[", op, "] strict dtype mode: ", what, " is ", dtype_name(value), " and the written-to tensor is ",
            dtype_name(dest), "; convert explicitly, e.g. ", fix, ".to(", rill_dtype(dest), ")");
}

void check_strict_number(std::string_view op, Scalar s, DType dest) {
  if (category(s) <= category(dest) || !strict_dtype()) return;
  RILL_FAIL(Type, "[", op, "] strict dtype mode: ", number_kind(s), " with a ", dtype_name(dest),
            " tensor; convert explicitly, e.g. ", category(dest) == 0 ? "bool(value)" : "int(value)",
            ", or convert the tensor with .to(", rill_dtype(s.is_floating() ? default_float() : DType::kInt64), ")");
}

}  // namespace rill
