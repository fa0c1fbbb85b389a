#pragma once

// Internal to engine/model: typed, error-collecting access to a simdjson object, for the
// loaders of config.json-style files. Not part of any public header (simdjson stays private).
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

// Reads optional fields: an absent or null field is nullopt; a field of the wrong type records
// an error naming the file and field (the first one is kept) and reads as nullopt.
class JsonObjectReader {
 public:
  JsonObjectReader(simdjson::dom::object object, std::string context)
      : object_(object), context_(std::move(context)) {}

  std::optional<simdjson::dom::element> get(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key);
  std::optional<double> get_number(std::string_view key);  // integer or float
  std::optional<std::string_view> get_string(std::string_view key);
  std::optional<bool> get_bool(std::string_view key);
  std::optional<simdjson::dom::object> get_object(std::string_view key);
  // An integer or a list of integers (eos_token_id), as a list.
  std::optional<std::vector<std::int64_t>> get_int_list(std::string_view key);

  void fail(std::string_view key, std::string_view reason);
  const std::optional<Error>& error() const { return error_; }
  const std::string& context() const { return context_; }

 private:
  simdjson::dom::object object_;
  std::string context_;
  std::optional<Error> error_;
};

// Parses a whole small JSON file (config.json and friends) that must hold an object.
struct JsonDocument {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
};
Status parse_json_file(const std::string& path, JsonDocument& document);

}  // namespace tern::engine
