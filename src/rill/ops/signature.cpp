#include "rill/ops/signature.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "rill/util/error.h"

namespace rill {
namespace {

// A recursive-descent reader over one signature's text; every error names the text and the column.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(std::string_view what) const {
    RILL_FAIL(Runtime, "[ops] bad op signature '", text_, "' at column ", pos_ + 1, ": ", what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool accept(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }

  ArgType type() {
    std::string t = identifier();
    ArgType base;
    if (t == "Tensor") base = ArgType::kTensor;
    else if (t == "int") base = ArgType::kInt;
    else if (t == "float") base = ArgType::kFloat;
    else if (t == "bool") base = ArgType::kBool;
    else if (t == "ScalarType") base = ArgType::kScalarType;
    else if (t == "Scalar") base = ArgType::kScalar;
    else if (t == "str") base = ArgType::kStr;
    else fail("unknown argument type '" + t + "'");
    if (!accept('[')) return base;
    while (!peek(']') && !at_end()) ++pos_;  // int[2]: the length documents, it does not constrain
    expect(']');
    if (base == ArgType::kTensor) return ArgType::kTensorList;
    if (base == ArgType::kInt) return ArgType::kIntList;
    fail("only Tensor[] and int[] lists are supported");
  }

  ArgDefault default_value(const ArgSpec& a) {
    skip_space();
    if (accept("None")) {
      if (!a.optional) fail("None default for '" + a.name + "', which is not optional (write its type with ?)");
      return std::monostate{};
    }
    if (accept("True")) return true;
    if (accept("False")) return false;
    if (accept('"')) {
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] != '"') ++pos_;
      std::string s(text_.substr(start, pos_ - start));
      expect('"');
      return s;
    }
    if (accept('[')) {
      std::vector<int64_t> v;
      while (!accept(']')) {
        if (!v.empty()) expect(',');
        v.push_back(integer());
      }
      return v;
    }
    skip_space();
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])))) {
      std::string word = identifier();  // inf, or a dtype name for ScalarType
      if (word == "inf") return std::numeric_limits<double>::infinity();
      return word;
    }
    return number(a.type == ArgType::kIntList ? ArgType::kInt : a.type);
  }

  int64_t integer() {
    skip_space();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc()) fail("expected an integer");
    pos_ = end - text_.data();
    return v;
  }

  ArgDefault number(ArgType type) {
    skip_space();
    size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    if (accept("inf")) return text_[start] == '-' ? -std::numeric_limits<double>::infinity()
                                                  : std::numeric_limits<double>::infinity();
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                   text_[pos_] == 'e' || text_[pos_] == 'E' ||
                                   ((text_[pos_] == '-' || text_[pos_] == '+') &&
                                    (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
      ++pos_;
    std::string_view tok = text_.substr(start, pos_ - start);
    if (tok.empty()) fail("expected a default value");
    const bool is_float = tok.find_first_of(".eE") != std::string_view::npos;
    if (is_float || type == ArgType::kFloat) {
      double d = 0;
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
      if (ec != std::errc() || end != tok.data() + tok.size()) fail("bad number '" + std::string(tok) + "'");
      return d;
    }
    int64_t i = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), i);
    if (ec != std::errc() || end != tok.data() + tok.size()) fail("bad number '" + std::string(tok) + "'");
    return i;
  }

  // The outputs; names receives their names when the signature names them (every one or none).
  int outputs(std::vector<std::string>& names) {
    if (accept('(')) {
      int n = 0;
      while (!accept(')')) {
        if (n > 0) expect(',');
        if (type() != ArgType::kTensor) fail("outputs are Tensors");
        const bool named = !peek(',') && !peek(')');
        if (n > 0 && named != !names.empty()) fail("name every output or none");
        if (named) names.push_back(identifier());
        ++n;
      }
      return n;
    }
    ArgType t = type();
    if (t == ArgType::kTensorList) return -1;
    if (t != ArgType::kTensor) fail("outputs are Tensors");
    return 1;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

void write_default(std::ostream& os, const ArgDefault& d) {
  if (std::holds_alternative<std::monostate>(d)) os << "None";
  else if (auto* b = std::get_if<bool>(&d)) os << (*b ? "True" : "False");
  else if (auto* i = std::get_if<int64_t>(&d)) os << *i;
  else if (auto* f = std::get_if<double>(&d)) {
    if (std::isinf(*f)) os << (*f < 0 ? "-inf" : "inf");
    else {
      std::ostringstream num;
      num << *f;
      std::string s = num.str();
      os << s << (s.find_first_of(".eEn") == std::string::npos ? ".0" : "");
    }
  } else if (auto* v = std::get_if<std::vector<int64_t>>(&d)) {
    os << '[';
    for (size_t k = 0; k < v->size(); ++k) os << (k ? ", " : "") << (*v)[k];
    os << ']';
  } else {
    os << '"' << std::get<std::string>(d) << '"';
  }
}

}  // namespace

std::string_view arg_type_name(ArgType t) {
  switch (t) {
    case ArgType::kTensor: return "Tensor";
    case ArgType::kTensorList: return "Tensor[]";
    case ArgType::kInt: return "int";
    case ArgType::kIntList: return "int[]";
    case ArgType::kFloat: return "float";
    case ArgType::kBool: return "bool";
    case ArgType::kScalarType: return "ScalarType";
    case ArgType::kScalar: return "Scalar";
    case ArgType::kStr: return "str";
  }
  return "?";
}

Signature parse_signature(std::string_view text) {
  Reader r(text);
  Signature sig;
  sig.name = r.identifier();
  r.expect('(');
  bool kwarg_only = false;
  while (!r.accept(')')) {
    if (!sig.args.empty() || kwarg_only) r.expect(',');
    if (r.accept('*')) {
      if (kwarg_only) r.fail("'*' given twice");
      kwarg_only = true;
      continue;
    }
    ArgSpec a;
    a.type = r.type();
    a.optional = r.accept('?');
    a.kwarg_only = kwarg_only;
    a.name = r.identifier();
    if (sig.find(a.name) >= 0) r.fail("argument '" + a.name + "' given twice");
    if (r.accept('=')) a.default_value = r.default_value(a);
    else if (!a.kwarg_only && !sig.args.empty() && sig.args.back().default_value && !sig.args.back().kwarg_only)
      r.fail("argument '" + a.name + "' without a default follows one with a default");
    sig.args.push_back(std::move(a));
  }
  if (!r.accept("->")) r.fail("expected '->' and the outputs");
  sig.num_outputs = r.accept("()") ? 0 : r.outputs(sig.output_names);
  if (!r.at_end()) r.fail("unexpected text after the outputs");
  return sig;
}

std::string Signature::str() const {
  std::ostringstream os;
  os << name << '(';
  bool star = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    if (i) os << ", ";
    if (a.kwarg_only && !star) {
      os << "*, ";
      star = true;
    }
    os << arg_type_name(a.type) << (a.optional ? "?" : "") << ' ' << a.name;
    if (a.default_value) {
      os << '=';
      write_default(os, *a.default_value);
    }
  }
  os << ") -> ";
  if (num_outputs == 1 && output_names.empty()) os << "Tensor";
  else if (num_outputs == -1) os << "Tensor[]";
  else {
    os << '(';
    for (int i = 0; i < num_outputs; ++i)
      os << (i ? ", " : "") << "Tensor" << (output_names.empty() ? "" : " " + output_names[i]);
    os << ')';
  }
  return os.str();
}

int Signature::find(std::string_view n) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == n) return static_cast<int>(i);
  return -1;
}

}  // namespace rill
