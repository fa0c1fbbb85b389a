#include "service/openai/unimplemented_fields.h"

#include <limits>
#include <string>

#include <fmt/format.h>

namespace tern::service::openai {
namespace {

json::Check check_response_format(const json::element& value) {
  json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return json::wrong_type("response_format", "object", value);
  }
  std::string_view type;
  if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
    return invalid_request("response_format", "'response_format' needs a string 'type'",
                           "invalid_type");
  }
  if (type == "text") return std::nullopt;
  return not_implemented(
      "response_format",
      fmt::format("'response_format' of type '{}' is not supported yet; only 'text' is", type));
}

json::Check check_best_of(const json::element& value) {
  int best_of = 1;
  if (json::Check error =
          json::read_int(value, "best_of", 1, std::numeric_limits<int>::max(), best_of)) {
    return error;
  }
  if (best_of == 1) return std::nullopt;
  return not_implemented("best_of", "'best_of' above 1 is not supported yet");
}

}  // namespace

ApiError not_implemented(std::string param, std::string message) {
  return invalid_request(std::move(param), std::move(message), "unsupported_parameter");
}

json::Check refuse_unimplemented_field(std::string_view key, const json::element& value) {
  if (key == "response_format") return check_response_format(value);
  if (key == "best_of") return check_best_of(value);
  if (key.starts_with("guided_")) {
    return not_implemented(
        std::string(key),
        fmt::format("'{}' is not supported yet (tern has no guided decoding)", key));
  }
  return std::nullopt;
}

}  // namespace tern::service::openai
