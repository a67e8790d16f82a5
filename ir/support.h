#pragma once
// Result<T>: library code returns values or errors, never throws across a
// library boundary. An Error carries a stable kebab-case id and a message in
// the project's diagnostic style (lowercase, values included, no final period).
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace sp {

struct Error {
  std::string id;       // stable kebab-case id, e.g. "shape-mismatch"
  std::string message;  // "add: cannot broadcast [2,3] with [4]"
  std::string location; // "model.onnx:node 'MatMul_3'", "file.sp:12:5", ""
  std::string str() const {
    return location.empty() ? message : location + ": " + message;
  }
};

inline Error makeError(std::string id, std::string message, std::string loc = {}) {
  return Error{std::move(id), std::move(message), std::move(loc)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { SP_CHECK_OK(); return std::get<0>(v_); }
  const T& value() const& { SP_CHECK_OK(); return std::get<0>(v_); }
  T&& value() && { SP_CHECK_OK(); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  void SP_CHECK_OK() const {
    if (!ok()) {
      std::fprintf(stderr, "internal error: value() on error result: %s\n",
                   std::get<1>(v_).str().c_str());
      std::abort();
    }
  }
  std::variant<T, Error> v_;
};

// Status: a Result with no value.
struct Ok {};
using Status = Result<Ok>;
inline Status okStatus() { return Ok{}; }

}  // namespace sp

// Internal invariants stay checked in release builds.
#define SP_ASSERT(cond, msg)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "internal error: %s:%d: %s: %s\n", __FILE__,        \
                   __LINE__, #cond, std::string(msg).c_str());                 \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

// Propagate an error from an expression returning Result/Status.
#define SP_TRY(expr)                                                           \
  do {                                                                         \
    auto sp_try_r_ = (expr);                                                   \
    if (!sp_try_r_.ok()) return sp_try_r_.error();                             \
  } while (0)

#define SP_CONCAT_INNER(a, b) a##b
#define SP_CONCAT(a, b) SP_CONCAT_INNER(a, b)
// SP_ASSIGN(auto x, expr): declares x from a Result or returns its error.
#define SP_ASSIGN(decl, expr) SP_ASSIGN_IMPL(SP_CONCAT(sp_r_, __LINE__), decl, expr)
#define SP_ASSIGN_IMPL(tmp, decl, expr)                                        \
  auto tmp = (expr);                                                           \
  if (!tmp.ok()) return tmp.error();                                           \
  decl = std::move(tmp).value()
