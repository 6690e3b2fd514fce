// rill's error model (CONVENTIONS.md): user errors are typed C++ exceptions that
// the bindings turn into Python TypeError / ValueError / IndexError / RuntimeError;
// internal invariants use RILL_ASSERT and say "this is a bug". Messages are built
// only on failure.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace rill {

/** The Python exception type an error becomes. */
enum class ErrorKind { kType, kValue, kIndex, kRuntime, kNotImplemented };

/** A user-facing error: a kind plus a message that starts with the op or API name. */
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  /** Which Python exception this becomes. */
  ErrorKind kind() const noexcept { return kind_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  ErrorKind kind_;
  std::string message_;
};

namespace detail {
template <typename... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_error(ErrorKind kind, const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(kind, os.str());
}
}  // namespace detail

}  // namespace rill

/** Raise a user error of kind (Type, Value, Index, Runtime, NotImplemented) unless cond holds. */
#define RILL_CHECK(cond, kind, ...)                                        \
  do {                                                                     \
    if (!(cond)) [[unlikely]]                                              \
      ::rill::detail::throw_error(::rill::ErrorKind::k##kind, __VA_ARGS__); \
  } while (0)

/** Raise a user error of the given kind unconditionally. */
#define RILL_FAIL(kind, ...) ::rill::detail::throw_error(::rill::ErrorKind::k##kind, __VA_ARGS__)

/** An internal invariant: failing it is a bug in rill, reported as RuntimeError. */
#define RILL_ASSERT(cond, ...)                                                               \
  do {                                                                                       \
    if (!(cond)) [[unlikely]]                                                                \
      ::rill::detail::throw_error(::rill::ErrorKind::kRuntime, "internal error (this is a bug in rill): ", \
                                  #cond, " at " __FILE__ ":", __LINE__, " ", ##__VA_ARGS__); \
  } while (0)
