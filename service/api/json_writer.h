#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/json_string.h"  // the escaper JsonWriter writes strings with

namespace tern::service::api {

// Appends compact JSON to a string, inserting commas itself. Strings are escaped and made valid
// UTF-8 (a malformed byte becomes U+FFFD), so model output can never break a response. Built
// for the per-token path: no allocation beyond the output string's growth.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The next value belongs to `name` (a key known not to need escaping is fine too).
  JsonWriter& key(std::string_view name);

  JsonWriter& string(std::string_view text);
  JsonWriter& integer(std::int64_t value);
  JsonWriter& unsigned_integer(std::uint64_t value);
  // Shortest text that reads back to the same double; NaN and infinities become null.
  JsonWriter& number(double value);
  JsonWriter& boolean(bool value);
  JsonWriter& null();
  // Already-encoded JSON, such as a value passed through from the request.
  JsonWriter& raw(std::string_view json);

  // Shorthands for a key and its value.
  JsonWriter& field(std::string_view name, std::string_view text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, const char* text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, std::int64_t value) { return key(name).integer(value); }
  JsonWriter& field(std::string_view name, int value) { return key(name).integer(value); }
  JsonWriter& field(std::string_view name, bool value) { return key(name).boolean(value); }
  JsonWriter& field(std::string_view name, double value) { return key(name).number(value); }
  JsonWriter& null_field(std::string_view name) { return key(name).null(); }

 private:
  void before_value();

  std::string& out_;
  // One bit per open container: set once it holds an element, so the next needs a comma.
  std::uint64_t has_element_ = 0;
  int depth_ = 0;
  bool after_key_ = false;
};

}  // namespace tern::service::api
