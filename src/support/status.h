// Status and Expected<T>: every fallible call outside microkernels returns one of these, with a
// message a user can act on (it names the node, the op, the value).
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

// Concatenates anything streamable; the one way messages are built.
template <class... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  template <class... Args>
  static Status Error(const Args&... args) {
    Status s;
    s.ok_ = false;
    s.message_ = StrCat(args...);
    if (s.message_.empty()) s.message_ = "unknown error";
    return s;
  }
  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }
  // Prefixes context ("node 'conv1' (Conv, opset 13): ") to an error; no-op on success.
  Status WithContext(const std::string& prefix) const {
    if (ok_) return *this;
    Status s = *this;
    s.message_ = prefix + message_;
    return s;
  }

 private:
  bool ok_ = true;
  std::string message_;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).ok()) v_ = Status::Error("internal: Expected built from an OK status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

#define KILN_RETURN_IF_ERROR(expr)             \
  do {                                         \
    ::kiln::Status kiln_status_ = (expr);      \
    if (!kiln_status_.ok()) return kiln_status_; \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// KILN_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error from the enclosing function.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(kiln_expected_, __LINE__), lhs, expr)
