#include "service/anthropic/messages_error.h"

#include "service/api/json_writer.h"

namespace tern::service::anthropic {

std::string_view error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string error_body(const api::ApiError& error) {
  std::string message = error.param.empty() ? error.message : error.param + ": " + error.message;
  std::string out;
  out.reserve(64 + message.size());
  api::JsonWriter json(out);
  json.begin_object().field("type", "error").key("error").begin_object();
  json.field("type", error_type(error.status)).field("message", message);
  json.end_object().end_object();
  return out;
}

}  // namespace tern::service::anthropic
