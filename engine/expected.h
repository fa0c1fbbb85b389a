#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tern {

// What kind of failure an Error is, so that callers (the HTTP service above all) can tell them
// apart without reading the message.
enum class ErrorKind {
  internal,        // a fault of the server or the model: the service's 500
  invalid_field,   // the request's `field` is wrong, or asks for more than a limit allows: 400
  context_length,  // prompt plus completion cannot fit the model's context or KV cache: 400
  overloaded,      // cannot be taken now, may be later (`retry_after_s`): 429
  not_found,       // what was asked for does not exist: 404
  unavailable,     // the component cannot take work at all (stopping, not loaded): 503
};

// A failure that crosses a boundary as a value, never as an exception: the message names the
// file, key, tensor or field and the reason, ready to show to a user.
struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::internal;
  std::string field;      // the request field at fault (OpenAI's `param`), when there is one
  int retry_after_s = 0;  // for overloaded: when trying again may succeed
};

// The C++20 stand-in for std::expected<T, E>. E is Error everywhere but at the HTTP edge, which
// carries OpenAI's richer error (service/openai/api_error.h).
template <typename T, typename E = Error>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(E error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const E& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, E> state_;
};

// For operations that return nothing on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}

  static Status success() { return {}; }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return error_.message; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace tern
