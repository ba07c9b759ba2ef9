// Status / StatusOr: the one error type at module boundaries.
//
// A Status is either OK or carries a code and a human-readable message that
// names what was wrong and where ("model.gguf: tensor 'blk.0.attn_q.weight':
// data runs past end of file"). No exceptions cross module boundaries.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace deepinfer {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input (flag, request, schema)
  kNotFound,         // missing file, key or tensor
  kDataLoss,         // corrupted or truncated file
  kUnimplemented,    // valid input that this build does not support
  kResourceExhausted,
  kInternal,
  kUnavailable,  // not ready or shutting down (HTTP 503)
  kOutOfRange,   // input longer than a configured limit (e.g. prompt > max_model_len)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message" for logs; user-facing output prints message() alone.
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (for adding the file name etc.).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}
  StatusOr(T&& value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace deepinfer

#define DI_CONCAT_INNER(a, b) a##b
#define DI_CONCAT(a, b) DI_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define DI_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::deepinfer::Status di_status_ = (expr); \
    if (!di_status_.ok()) return di_status_; \
  } while (0)

// DI_ASSIGN_OR_RETURN(auto x, MakeX()); — unwraps a StatusOr or returns its Status.
#define DI_ASSIGN_OR_RETURN(lhs, expr) DI_ASSIGN_OR_RETURN_IMPL(DI_CONCAT(di_so_, __LINE__), lhs, expr)
// `tmp` is a name and `lhs` a declaration or an lvalue: neither can be
// parenthesized, hence the NOLINT.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
