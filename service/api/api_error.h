#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "engine/expected.h"

namespace tern::service::api {

// A client-facing failure: the HTTP status plus OpenAI's error body
// {"error":{"message","type","param","code"}}. Empty param or code are written as null.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
  std::string code;
  int retry_after_s = 0;  // > 0 adds a Retry-After header (429, 503)
};

// 400 invalid_request_error naming the offending field.
ApiError invalid_request(std::string param, std::string message, std::string code = {});
ApiError model_not_found(std::string_view model);
ApiError invalid_api_key();  // a key was sent, and it is not one of the configured keys
ApiError missing_api_key();  // no Bearer key was sent
ApiError unsupported_media_type(std::string_view content_type);  // 415: the body is not JSON
ApiError route_not_found(std::string_view method, std::string_view path);
ApiError method_not_allowed(std::string_view method, std::string_view path);
ApiError request_too_large(std::uint64_t limit_bytes);
ApiError request_timeout();
ApiError too_many_requests(std::string message, int retry_after_s);
ApiError service_unavailable(std::string message, int retry_after_s = 0);
ApiError server_error(std::string message);
// The 400 for a field (or one value of it) that tern does not implement yet.
ApiError not_implemented(std::string param, std::string message);
ApiError context_length_exceeded(int prompt_tokens, int max_tokens, int context_length);

// {"error":{...}} as one JSON line.
std::string encode_error(const ApiError& error);

// A value or an ApiError, never an exception.
template <typename T>
using ApiResult = Expected<T, ApiError>;

}  // namespace tern::service::api
