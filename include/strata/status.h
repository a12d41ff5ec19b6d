// Status and Result<T>: how bad input and environment failures travel (STYLE.md "Errors").
// A failed Status carries one line that names the file and the problem; the CLI prints it and
// exits non-zero. Our own broken invariants use STRATA_CHECK (base/check.h) instead.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace strata {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success

  static Status error(std::string message) { return Status(std::move(message)); }
  template <class... Args>
  static Status errorf(fmt::format_string<Args...> format, Args&&... args) {
    return Status(fmt::format(format, std::forward<Args>(args)...));
  }

  bool ok() const { return !message_.has_value(); }
  // REQUIRES: !ok()
  const std::string& message() const { return *message_; }

  // "prefix: message", for adding the file name or the operation as an error travels up.
  Status with_prefix(std::string_view prefix) const {
    if (ok()) return *this;
    return Status(fmt::format("{}: {}", prefix, *message_));
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}       // NOLINT: implicit by design
  Result(Status error) : state_(std::move(error)) {}  // NOLINT: REQUIRES !error.ok()

  bool ok() const { return std::holds_alternative<T>(state_); }
  // A reference into this Result (or to a shared success value): keep the Result alive.
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

#define STRATA_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                                 \
  if (!result.ok()) return result.status();             \
  lhs = std::move(result).value()

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_result_, __LINE__), lhs, expr)
