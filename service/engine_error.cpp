#include "service/engine_error.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace tern::service {

api::ApiError api_error_from(const Error& error, std::string_view model_name,
                             std::string_view prompt_param) {
  const std::string param =
      error.field.empty() || error.field == "prompt" ? std::string(prompt_param) : error.field;
  switch (error.kind) {
    case ErrorKind::invalid_field:
      return api::invalid_request(error.field.empty() ? "" : param, error.message);
    case ErrorKind::context_length:
      return api::invalid_request(param, error.message, "context_length_exceeded");
    case ErrorKind::overloaded: {
      const int retry_after_s = std::max(error.retry_after_s, 1);
      return api::too_many_requests(
          fmt::format("The model '{}' is overloaded ({}); retry after {} s", model_name,
                      error.message, retry_after_s),
          retry_after_s);
    }
    case ErrorKind::not_found:
      return api::ApiError{404, error.message, "invalid_request_error", error.field, "not_found"};
    case ErrorKind::unavailable:
      return api::service_unavailable(
          fmt::format("The model '{}' cannot take requests: {}", model_name, error.message), 1);
    case ErrorKind::internal:
      break;
  }
  return api::server_error(error.message.empty() ? "the engine failed" : error.message);
}

}  // namespace tern::service
