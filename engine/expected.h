#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tern {

// A failure that crosses a boundary as a value, never as an exception: the message names the
// file, key, tensor or field and the reason, ready to show to a user.
struct Error {
  std::string message;
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
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}

  static Status success() { return {}; }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

}  // namespace tern
