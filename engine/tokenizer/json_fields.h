#pragma once

// Small exception-free accessors over simdjson DOM elements for the tokenizer.json loader.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tern::engine::json_fields {

using simdjson::dom::element;

inline std::optional<element> field(element object, std::string_view key) {
  element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  return value;
}

inline std::optional<std::string_view> string_field(element object, std::string_view key) {
  const auto value = field(object, key);
  std::string_view text;
  if (!value || value->get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  return text;
}

inline bool bool_field(element object, std::string_view key, bool fallback) {
  const auto value = field(object, key);
  bool flag = fallback;
  if (!value || value->get_bool().get(flag) != simdjson::SUCCESS) return fallback;
  return flag;
}

inline std::optional<std::int64_t> int_field(element object, std::string_view key) {
  const auto value = field(object, key);
  std::int64_t number = 0;
  if (!value || value->get_int64().get(number) != simdjson::SUCCESS) return std::nullopt;
  return number;
}

// A token given as "text" or as {"content": "text", ...} (tokenizer_config.json allows both).
inline std::optional<std::string_view> token_string(element value) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) return text;
  return string_field(value, "content");
}

// simdjson rejects integers beyond 64 bits, which tokenizer_config.json writes for an unbounded
// model_max_length (1e30 as an integer). Rewriting such integers as floats (outside strings)
// lets the rest of the file parse; no field tern reads is that large.
inline std::string widen_big_integers(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size()) {
        out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c < '0' || c > '9') {
      out.push_back(c);
      continue;
    }
    std::size_t end = i;
    while (end < json.size() && json[end] >= '0' && json[end] <= '9') ++end;
    out.append(json.substr(i, end - i));
    const bool fraction =
        end < json.size() && (json[end] == '.' || json[end] == 'e' || json[end] == 'E');
    if (end - i > 18 && !fraction) out.append(".0");
    i = end - 1;
  }
  return out;
}

}  // namespace tern::engine::json_fields
