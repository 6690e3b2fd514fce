// _fused_elementwise (fused.h): the program's text form and the op's inference.
#include "rill/ops/fused.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <variant>

#include "rill/ops/op_schema.h"
#include "rill/ops/sbp.h"
#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill {
namespace fused {

// Note [Fused elementwise programs]
// A program is a chain of elementwise op calls (OpFlags::elementwise: one output, element i of it reads
// element i of each broadcast input) over the op's inputs, all making the same shape. It travels as the op's one
// str attr, so a job, a plan and the inference cache carry it like any attr and an actor runs the op like any
// op. The text is
//     <inputs> <steps> {<op> <n> {e<k> | s<k>}* <n> {<attr>}* <n> {<scalar>}*}* <n> {<step>}*
// with every number followed by a space, names and strings as <length>:<bytes>, floats as the hex of their
// bits (exact), attrs tagged b/i/f/l/d/s/n and scalars b/i/f. Inference runs each step's own inference on the
// step's input metas; a step must not convert its inputs (the trace made every conversion an op of its own),
// so the kernel can call each step's kernel on the very tiles it computed. The kernel (kernels/cpu/fused.cpp)
// decodes a program once per interned attrs (program_of).

// Note [Row steps]
// Besides elementwise ops, a program may hold row steps: softmax, log_softmax and their backward ops, each along a
// dim other than 0 of the steps' shape (a reduction fed by elementwise producers, or feeding elementwise readers:
// scores * scale + mask -> softmax; softmax_backward -> * scale). The kernel then cuts tiles only along dim 0, so a
// tile holds whole rows of every row step's dim, and each row step runs its own kernel on the tile. Its inputs
// are dense and of the steps' shape (the pass fuses only such), as those kernels read them. A split along a row
// dim would cut the rows: the op's SBP signatures leave those splits out.

bool is_row_step(const OpSchema& op) {
  return op.name == "softmax" || op.name == "log_softmax" || op.name == "softmax_backward" ||
         op.name == "log_softmax_backward";
}

bool has_row_steps(const Program& p) {
  for (const Step& s : p.steps)
    if (is_row_step(*s.op)) return true;
  return false;
}

std::vector<int64_t> row_dims(const Program& p, int64_t ndim) {
  std::vector<int64_t> dims;
  for (const Step& s : p.steps)
    if (is_row_step(*s.op)) {
      const int64_t d = s.attrs->get_int(s.op->attr_index("dim"));
      dims.push_back(d < 0 ? d + ndim : d);
    }
  return dims;
}

namespace {

class Writer {
 public:
  void num(int64_t v) { out_ += std::to_string(v); out_ += ' '; }
  void text(std::string_view s) { out_ += std::to_string(s.size()); out_ += ':'; out_ += s; }
  void tag(char t) { out_ += t; }
  void real(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx ", static_cast<unsigned long long>(bits));
    out_ += buf;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  int64_t num() { return parse(10); }
  std::string_view text() {
    const int64_t n = parse_until(':', 10);
    check(n >= 0 && static_cast<size_t>(n) <= s_.size() - pos_, "a name runs past the end");
    std::string_view v = s_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return v;
  }
  char tag() {
    check(pos_ < s_.size(), "it ends early");
    return s_[pos_++];
  }
  double real() {
    const uint64_t bits = static_cast<uint64_t>(parse(16));
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  bool done() const { return pos_ == s_.size(); }
  void check(bool ok, const char* what) const {
    RILL_CHECK(ok, Runtime, "[", kOpName, "] the program attr is not one the fuse_elementwise pass wrote (", what,
               " at character ", pos_, ")");
  }

 private:
  int64_t parse(int base) { return parse_until(' ', base); }
  int64_t parse_until(char end, int base) {
    const size_t stop = s_.find(end, pos_);
    check(stop != std::string_view::npos && stop > pos_, "a number is missing");
    const std::string digits(s_.substr(pos_, stop - pos_));
    char* last = nullptr;
    const int64_t v = base == 10 ? std::strtoll(digits.c_str(), &last, 10)
                                 : static_cast<int64_t>(std::strtoull(digits.c_str(), &last, 16));
    check(last == digits.c_str() + digits.size(), "a number is malformed");
    pos_ = stop + 1;
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void write_attr(Writer& w, const AttrValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) { w.tag('b'); w.num(x); }
        else if constexpr (std::is_same_v<T, int64_t>) { w.tag('i'); w.num(x); }
        else if constexpr (std::is_same_v<T, double>) { w.tag('f'); w.real(x); }
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          w.tag('l');
          w.num(static_cast<int64_t>(x.size()));
          for (int64_t e : x) w.num(e);
        } else if constexpr (std::is_same_v<T, DType>) { w.tag('d'); w.num(static_cast<int64_t>(x)); }
        else if constexpr (std::is_same_v<T, std::string>) { w.tag('s'); w.text(x); }
        else { w.tag('n'); }
      },
      v);
}

AttrValue read_attr(Reader& r) {
  switch (r.tag()) {
    case 'b': return r.num() != 0;
    case 'i': return r.num();
    case 'f': return r.real();
    case 'l': {
      const int64_t n = r.num();
      r.check(n >= 0, "a list length is negative");
      std::vector<int64_t> v;
      for (int64_t k = 0; k < n; ++k) v.push_back(r.num());
      return v;
    }
    case 'd': {
      const int64_t d = r.num();
      r.check(d >= 0 && d < kNumDTypes, "a dtype is unknown");
      return static_cast<DType>(d);
    }
    case 's': return std::string(r.text());
    case 'n': return std::monostate{};
    default: r.check(false, "an attr tag is unknown"); return std::monostate{};
  }
}

}  // namespace

std::string encode(const Program& p) {
  Writer w;
  w.num(p.num_inputs);
  w.num(static_cast<int64_t>(p.steps.size()));
  for (const Step& s : p.steps) {
    w.text(s.op->name);
    w.num(static_cast<int64_t>(s.inputs.size()));
    for (const Ref& ref : s.inputs) {
      w.tag(ref.step ? 's' : 'e');
      w.num(ref.index);
    }
    w.num(static_cast<int64_t>(s.attrs->size()));
    for (const AttrValue& v : s.attrs->values) write_attr(w, v);
    w.num(static_cast<int64_t>(s.scalars.size()));
    for (const Scalar& x : s.scalars) {
      if (x.kind() == Scalar::Kind::kBool) { w.tag('b'); w.num(x.to_int()); }
      else if (x.kind() == Scalar::Kind::kInt) { w.tag('i'); w.num(x.to_int()); }
      else if (x.kind() == Scalar::Kind::kFloat) { w.tag('f'); w.real(x.to_double()); }
      else w.tag('n');
    }
  }
  w.num(static_cast<int64_t>(p.outputs.size()));
  for (int32_t o : p.outputs) w.num(o);
  return w.take();
}

Program decode(std::string_view text) {
  Reader r(text);
  Program p;
  p.num_inputs = static_cast<int32_t>(r.num());
  r.check(p.num_inputs >= 0, "the input count is negative");
  const int64_t steps = r.num();
  r.check(steps >= 1 && steps <= kMaxSteps, "the step count is out of range");
  for (int64_t j = 0; j < steps; ++j) {
    Step s;
    const std::string name(r.text());
    s.op = ops::find(name);
    RILL_CHECK(s.op && ((s.op->flags.elementwise && !s.op->flags.random) || is_row_step(*s.op)), Runtime, "[",
               kOpName, "] step ", j, " is '", name, "', which is neither an elementwise op nor a row step; only those "
               "fuse");
    const int64_t n = r.num();
    r.check(n >= 0 && n <= kMaxStepInputs, "a step's input count is out of range");
    for (int64_t k = 0; k < n; ++k) {
      Ref ref;
      const char t = r.tag();
      r.check(t == 's' || t == 'e', "an input tag is unknown");
      ref.step = t == 's';
      ref.index = static_cast<int32_t>(r.num());
      r.check(ref.index >= 0 && ref.index < (ref.step ? j : p.num_inputs), "an input refers past what exists");
      s.inputs.push_back(ref);
    }
    const int64_t na = r.num();
    r.check(na == static_cast<int64_t>(s.op->attr_names.size()), "a step's attr count is not its op's");
    std::vector<AttrValue> attrs;
    for (int64_t k = 0; k < na; ++k) attrs.push_back(read_attr(r));
    s.attrs = make_attrs(std::move(attrs));
    const int64_t ns = r.num();
    r.check(ns == s.op->num_scalars, "a step's scalar count is not its op's");
    for (int64_t k = 0; k < ns; ++k) {
      const char t = r.tag();
      if (t == 'b') s.scalars.emplace_back(r.num() != 0);
      else if (t == 'i') s.scalars.emplace_back(r.num());
      else if (t == 'f') s.scalars.emplace_back(r.real());
      else if (t == 'n') s.scalars.push_back(Scalar::none());
      else r.check(false, "a scalar tag is unknown");
    }
    p.steps.push_back(std::move(s));
  }
  const int64_t outs = r.num();
  r.check(outs >= 1 && outs <= steps, "the output count is out of range");
  for (int64_t k = 0; k < outs; ++k) {
    const int64_t o = r.num();
    r.check(o >= 0 && o < steps, "an output refers past the steps");
    p.outputs.push_back(static_cast<int32_t>(o));
  }
  r.check(r.done(), "text follows the outputs");
  return p;
}

const Program& program_of(const Attrs& attrs) {
  struct Cache {
    std::mutex mutex;
    std::unordered_map<const Attrs*, std::unique_ptr<Program>> programs;
  };
  static Cache* cache = [] {  // leaked, like the interned attrs it keys on
    auto* c = new Cache();
    fork::guard_mutex(&c->mutex);
    return c;
  }();
  std::lock_guard<std::mutex> lock(cache->mutex);
  std::unique_ptr<Program>& p = cache->programs[&attrs];
  if (!p) p = std::make_unique<Program>(decode(attrs.get_string(0)));
  return *p;
}

}  // namespace fused

namespace {

InferResult infer_fused(const InferContext& c) {
  const fused::Program& p = fused::program_of(c.attrs);
  RILL_CHECK(static_cast<int64_t>(c.inputs.size()) == p.num_inputs, Runtime, "[", fused::kOpName,
             "] the program reads ", p.num_inputs, " inputs, the call gives ", c.inputs.size());
  std::vector<MetaSym> values;
  values.reserve(p.steps.size());
  std::vector<MetaSym> ins;
  for (size_t j = 0; j < p.steps.size(); ++j) {
    const fused::Step& s = p.steps[j];
    ins.clear();
    for (const fused::Ref& ref : s.inputs) ins.push_back(ref.step ? values[ref.index] : c.inputs[ref.index]);
    InferResult r = s.op->infer(InferContext{*s.op, ins, s.scalars, *s.attrs});
    RILL_CHECK(r.outputs.size() == 1, Runtime, "[", fused::kOpName, "] step ", j, " (", s.op->name, ") makes ",
               r.outputs.size(), " outputs; a fused step makes one");
    for (size_t k = 0; k < r.input_dtypes.size(); ++k)
      RILL_CHECK(r.input_dtypes[k] == ins[k]->dtype, Runtime, "[", fused::kOpName, "] step ", j, " (", s.op->name,
                 ") would convert its input ", k, " from ", dtype_name(ins[k]->dtype), " to ",
                 dtype_name(r.input_dtypes[k]), "; a fused step reads inputs already converted");
    const TensorMeta& out = *r.outputs[0];
    if (j > 0)
      RILL_CHECK(out.shape == values[0]->shape, Runtime, "[", fused::kOpName, "] step ", j, " (", s.op->name,
                 ") makes shape ", shape_str(out.shape), ", step 0 makes ", shape_str(values[0]->shape),
                 "; the steps of one fused op make one shape");
    values.push_back(make_contiguous_meta(out.shape, out.dtype, out.device));
  }
  for (int64_t d : fused::row_dims(p, values[0]->ndim()))
    RILL_CHECK(d >= 1 && d < values[0]->ndim(), Runtime, "[", fused::kOpName, "] a row step reduces along dim ", d,
               " of shape ", shape_str(values[0]->shape), "; tiles are cut along dim 0, so a row step's dim is >= 1");
  InferResult result;
  for (int32_t o : p.outputs) result.outputs.push_back(values[o]);
  return result;
}

// elementwise_sbp's splits, less those along a row step's dim (Note [Row steps]).
std::vector<SbpSignature> sbp_fused(const SbpContext& c) {
  std::vector<SbpSignature> all = ops::elementwise_sbp(c);
  const fused::Program& p = fused::program_of(c.attrs);
  if (!fused::has_row_steps(p) || c.outputs.empty()) return all;
  const std::vector<int64_t> rows = fused::row_dims(p, c.outputs[0]->ndim());
  std::vector<SbpSignature> out;
  for (SbpSignature& sig : all) {
    const Sbp& o = sig.out[0];
    if (!(o.is_split() && std::find(rows.begin(), rows.end(), o.axis) != rows.end())) out.push_back(std::move(sig));
  }
  return out;
}

}  // namespace

void register_fused_ops() {
  ops::define("_fused_elementwise(Tensor[] inputs, str program) -> Tensor[]", infer_fused,
              {.differentiable = false},
              "a chain of elementwise ops evaluated tile by tile (graph mode's fuse_elementwise pass)")
      .sbp = sbp_fused;
}

}  // namespace rill
