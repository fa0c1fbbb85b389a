#include "service/api/json_reader.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "engine/json_parse_count.h"

namespace tern::service::api::json {
namespace {

// One parser per I/O thread: its buffers are reused, so a parse allocates only when a body is
// larger than any before it on this thread.
simdjson::dom::parser& thread_parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

std::string_view article(std::string_view noun) {
  return !noun.empty() && std::string_view("aeiou").find(noun[0]) != std::string_view::npos ? "an"
                                                                                            : "a";
}

}  // namespace

ApiResult<object> parse_object_body(std::string_view body) {
  simdjson::dom::parser& parser = thread_parser();
  // The body object itself is the first level.
  if (parser.capacity() < body.size() || parser.max_depth() != kMaxDepth) {
    const std::size_t capacity = std::max<std::size_t>(body.size(), 64 * 1024);
    if (parser.allocate(capacity, kMaxDepth) != simdjson::SUCCESS) {
      return server_error("out of memory while parsing the request body");
    }
  }
  if (body.empty()) return invalid_request("", "The request body is empty; expected a JSON object");
  const simdjson::padded_string padded(body);
  engine::count_json_parse();
  element root;
  const simdjson::error_code code = parser.parse(padded).get(root);
  switch (code) {
    case simdjson::SUCCESS:
      break;
    case simdjson::DEPTH_ERROR:
      return invalid_request(
          "", fmt::format("The request body is nested deeper than {} levels", kMaxDepth));
    case simdjson::UTF8_ERROR:
      return invalid_request("", "The request body is not valid UTF-8");
    case simdjson::STRING_ERROR:
      return invalid_request("",
                             "The request body has an invalid string (bad escape or control "
                             "character)");
    case simdjson::NUMBER_ERROR:
      return invalid_request("", "The request body has a number that is malformed or out of range");
    default:
      return invalid_request("", fmt::format("The request body is not valid JSON ({})",
                                             simdjson::error_message(code)));
  }
  object result;
  if (root.get_object().get(result) != simdjson::SUCCESS) {
    return invalid_request(
        "", fmt::format("The request body must be a JSON object, got {}", type_name(root)));
  }
  return result;
}

std::string_view type_name(const element& value) {
  switch (value.type()) {
    case simdjson::dom::element_type::ARRAY:
      return "array";
    case simdjson::dom::element_type::OBJECT:
      return "object";
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
      return "integer";
    case simdjson::dom::element_type::DOUBLE:
      return "number";
    case simdjson::dom::element_type::STRING:
      return "string";
    case simdjson::dom::element_type::BOOL:
      return "boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
  }
  return "value";
}

ApiError wrong_type(std::string_view param, std::string_view expected, const element& value) {
  const std::string_view got = type_name(value);
  return invalid_request(std::string(param),
                         fmt::format("Invalid type for '{}': expected {} {}, but got {} {} instead",
                                     param, article(expected), expected, article(got), got),
                         "invalid_type");
}

Check read_bool(const element& value, std::string_view param, bool& out) {
  if (value.get_bool().get(out) != simdjson::SUCCESS) return wrong_type(param, "boolean", value);
  return std::nullopt;
}

Check read_string(const element& value, std::string_view param, std::string& out) {
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return wrong_type(param, "string", value);
  out.assign(text);
  return std::nullopt;
}

Check read_integer(const element& value, std::string_view param, std::int64_t min, std::int64_t max,
                   std::int64_t& out) {
  auto out_of_range = [&] {
    return invalid_request(std::string(param),
                           fmt::format("Invalid value for '{}': {} is not in [{}, {}]", param,
                                       simdjson::to_string(value), min, max),
                           "invalid_value");
  };
  // 2^63 exactly: the first double past the int64 range.
  constexpr double kInt64End = 9223372036854775808.0;
  std::int64_t number = 0;
  if (value.is_int64()) {
    number = value.get_int64().value_unsafe();
  } else if (value.is_uint64()) {
    return out_of_range();  // above 2^63 - 1, so above every int64 bound; never saturated
  } else if (value.is_double()) {
    const double real = value.get_double().value_unsafe();
    if (real != std::floor(real)) return wrong_type(param, "integer", value);
    if (real >= kInt64End || real < -kInt64End) return out_of_range();
    number = static_cast<std::int64_t>(real);
  } else {
    return wrong_type(param, "integer", value);
  }
  if (number < min || number > max) return out_of_range();
  out = number;
  return std::nullopt;
}

Check read_int(const element& value, std::string_view param, int min, int max, int& out) {
  std::int64_t wide = 0;
  if (Check error = read_integer(value, param, min, max, wide)) return error;
  out = static_cast<int>(wide);
  return std::nullopt;
}

Check read_number(const element& value, std::string_view param, double min, double max,
                  double& out) {
  double number = 0;
  if (value.get_double().get(number) != simdjson::SUCCESS) {
    return wrong_type(param, "number", value);
  }
  if (!std::isfinite(number) || number < min || number > max) {
    return invalid_request(std::string(param),
                           fmt::format("Invalid value for '{}': {} is not in [{}, {}]", param,
                                       simdjson::to_string(value), min, max),
                           "invalid_value");
  }
  out = number;
  return std::nullopt;
}

Check read_token_ids(const element& value, std::string_view param, std::vector<std::int32_t>& out) {
  array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) return wrong_type(param, "array", value);
  out.clear();
  out.reserve(items.size());
  std::size_t index = 0;
  for (element item : items) {
    std::int64_t id = -1;
    if (item.is_int64()) id = item.get_int64().value_unsafe();
    if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
      // The slow path, only to build the message that names the element.
      const std::string item_param = fmt::format("{}[{}]", param, index);
      if (Check error =
              read_integer(item, item_param, 0, std::numeric_limits<std::int32_t>::max(), id)) {
        return error;
      }
    }
    out.push_back(static_cast<std::int32_t>(id));
    ++index;
  }
  return std::nullopt;
}

std::string to_json(const element& value) {
  return simdjson::minify(value);
}

}  // namespace tern::service::api::json
