#include "service/api/api_error.h"

#include <fmt/format.h>

#include "service/api/json_writer.h"

namespace tern::service::api {

ApiError invalid_request(std::string param, std::string message, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param),
                  std::move(code)};
}

ApiError model_not_found(std::string_view model) {
  return ApiError{404, fmt::format("The model '{}' does not exist", model), "invalid_request_error",
                  "model", "model_not_found"};
}

ApiError invalid_api_key() {
  return ApiError{401, "Incorrect API key provided", "authentication_error", "", "invalid_api_key"};
}

ApiError missing_api_key() {
  return ApiError{401, "No API key provided: send it as 'Authorization: Bearer KEY'",
                  "authentication_error", "", "invalid_api_key"};
}

ApiError unsupported_media_type(std::string_view content_type) {
  constexpr std::size_t kShown = 64;  // enough to recognise it; the header may be long
  std::string message =
      content_type.empty()
          ? std::string("The request body has no Content-Type; send it as application/json")
          : fmt::format("Content-Type '{}{}' is not supported; send the body as application/json",
                        content_type.substr(0, kShown), content_type.size() > kShown ? "..." : "");
  return ApiError{415, std::move(message), "invalid_request_error", "", "unsupported_media_type"};
}

ApiError route_not_found(std::string_view method, std::string_view path) {
  return ApiError{404, fmt::format("No route for {} {}", method, path), "invalid_request_error", "",
                  "not_found"};
}

ApiError method_not_allowed(std::string_view method, std::string_view path) {
  return ApiError{405, fmt::format("Method {} is not allowed for {}", method, path),
                  "invalid_request_error", "", "method_not_allowed"};
}

ApiError request_too_large(std::uint64_t limit_bytes) {
  return ApiError{413, fmt::format("The request body exceeds the limit of {} bytes", limit_bytes),
                  "invalid_request_error", "", "request_too_large"};
}

ApiError request_timeout() {
  return ApiError{408, "The request was not received in time", "invalid_request_error", "",
                  "request_timeout"};
}

ApiError too_many_requests(std::string message, int retry_after_s) {
  return ApiError{429, std::move(message),    "rate_limit_error",
                  "",  "rate_limit_exceeded", retry_after_s};
}

ApiError service_unavailable(std::string message, int retry_after_s) {
  return ApiError{503, std::move(message),    "service_unavailable_error",
                  "",  "service_unavailable", retry_after_s};
}

ApiError server_error(std::string message) {
  return ApiError{500, std::move(message), "server_error", "", "internal_error"};
}

ApiError not_implemented(std::string param, std::string message) {
  return invalid_request(std::move(param), std::move(message), "unsupported_parameter");
}

ApiError context_length_exceeded(int prompt_tokens, int max_tokens, int context_length) {
  return invalid_request(
      "messages",
      fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                  "tokens ({} in the messages, {} in the completion). Please reduce the length "
                  "of the messages or completion.",
                  context_length, prompt_tokens + max_tokens, prompt_tokens, max_tokens),
      "context_length_exceeded");
}

std::string encode_error(const ApiError& error) {
  std::string out;
  out.reserve(128 + error.message.size());
  JsonWriter json(out);
  json.begin_object().key("error").begin_object();
  json.field("message", error.message).field("type", error.type);
  if (error.param.empty()) {
    json.null_field("param");
  } else {
    json.field("param", error.param);
  }
  if (error.code.empty()) {
    json.null_field("code");
  } else {
    json.field("code", error.code);
  }
  json.end_object().end_object();
  return out;
}

}  // namespace tern::service::api
