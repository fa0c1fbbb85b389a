#pragma once

// Exception-free readers over simdjson DOM values that turn every mismatch into an OpenAI error
// naming the field. Used by every door's parser.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "service/api/api_error.h"

namespace tern::service::api::json {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Bodies nested deeper than this are rejected before any field is read.
inline constexpr std::size_t kMaxDepth = 64;

// Parses `body`, which must be a JSON object, with this thread's parser. The object stays valid
// until the next parse on the same thread.
ApiResult<object> parse_object_body(std::string_view body);

// A present error means the field was rejected; nullopt means `out` holds the value.
using Check = std::optional<ApiError>;

std::string_view type_name(const element& value);
ApiError wrong_type(std::string_view param, std::string_view expected, const element& value);

Check read_bool(const element& value, std::string_view param, bool& out);
Check read_string(const element& value, std::string_view param, std::string& out);
// An integer in [min, max]; a float with an integral value is accepted, as Python clients
// sometimes send 5.0.
Check read_integer(const element& value, std::string_view param, std::int64_t min, std::int64_t max,
                   std::int64_t& out);
Check read_int(const element& value, std::string_view param, int min, int max, int& out);
// A finite number in [min, max].
Check read_number(const element& value, std::string_view param, double min, double max,
                  double& out);
Check read_token_ids(const element& value, std::string_view param, std::vector<std::int32_t>& out);

// The value re-encoded as compact JSON, for fields passed through to the chat template.
std::string to_json(const element& value);

}  // namespace tern::service::api::json
