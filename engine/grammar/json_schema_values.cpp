#include "engine/grammar/json_schema_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "engine/grammar/json_schema_syntax.h"

namespace tern::engine::grammar {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Integers a double holds exactly.
constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

std::string shortest(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> number_spelling(element value) {
  switch (value.type()) {
    case element_type::INT64: {
      const std::int64_t number = value.get_int64().value_unsafe();
      if (number >= -kMaxExactInteger && number <= kMaxExactInteger) return std::to_string(number);
      return shortest(static_cast<double>(number));
    }
    case element_type::UINT64: {
      const std::uint64_t number = value.get_uint64().value_unsafe();
      if (number <= static_cast<std::uint64_t>(kMaxExactInteger)) return std::to_string(number);
      return shortest(static_cast<double>(number));
    }
    case element_type::DOUBLE: {
      const double number = value.get_double().value_unsafe();
      if (!std::isfinite(number)) return std::nullopt;
      return shortest(number == 0 ? 0.0 : number);  // -0 is 0 to a validator
    }
    default:
      return std::nullopt;
  }
}

std::string compact_json(element value) {
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return "null";
    case element_type::BOOL:
      return value.get_bool().value_unsafe() ? "true" : "false";
    case element_type::STRING:
      return json_quoted(value.get_string().value_unsafe());
    case element_type::ARRAY: {
      simdjson::dom::array array;
      if (value.get_array().get(array) != simdjson::SUCCESS) return "[]";
      std::string text = "[";
      for (const element item : array) {
        if (text.size() > 1) text += ',';
        text += compact_json(item);
      }
      return text + "]";
    }
    case element_type::OBJECT: {
      simdjson::dom::object object;
      if (value.get_object().get(object) != simdjson::SUCCESS) return "{}";
      std::string text = "{";
      for (const auto field : object) {
        if (text.size() > 1) text += ',';
        text += json_quoted(field.key);
        text += ':';
        text += compact_json(field.value);
      }
      return text + "}";
    }
    default:
      return number_spelling(value).value_or("0");
  }
}

bool JsonTypes::add(std::string_view name) {
  if (name == "null") {
    null = true;
  } else if (name == "boolean") {
    boolean = true;
  } else if (name == "string") {
    string = true;
  } else if (name == "integer") {
    integer = true;
  } else if (name == "number") {
    number = true;
  } else if (name == "object") {
    object = true;
  } else if (name == "array") {
    array = true;
  } else {
    return false;
  }
  return true;
}

bool JsonTypes::admits(element value) const {
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return null;
    case element_type::BOOL:
      return boolean;
    case element_type::STRING:
      return string;
    case element_type::ARRAY:
      return array;
    case element_type::OBJECT:
      return object;
    case element_type::INT64:
    case element_type::UINT64:
      return number || integer;
    case element_type::DOUBLE: {
      const double number_value = value.get_double().value_unsafe();
      return number ||
             (integer && std::isfinite(number_value) && std::trunc(number_value) == number_value);
    }
  }
  return false;
}

std::string with_big_integers_as_floats(std::string_view json) {
  // Every uint64 has at most 20 digits; from 20 on, the value may not fit.
  constexpr std::size_t kSafeDigits = 19;
  std::string out;
  out.reserve(json.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < json.size();) {
    const char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[i + 1];
        i += 2;
        continue;
      }
      in_string = c != '"';
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      ++i;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      out += c;
      ++i;
      continue;
    }
    const std::size_t start = i;
    std::size_t digits = 0;
    bool integer = true;
    while (i < json.size() &&
           std::string_view("+-.eE0123456789").find(json[i]) != std::string_view::npos) {
      if (json[i] >= '0' && json[i] <= '9') {
        ++digits;
      } else if (json[i] != '-') {
        integer = false;
      }
      ++i;
    }
    out.append(json.substr(start, i - start));
    if (integer && digits > kSafeDigits) out += ".0";
  }
  return out;
}

std::optional<std::string> reference_pointer(std::string_view reference) {
  if (reference.empty() || reference.front() != '#') return std::nullopt;
  std::string pointer;
  for (std::size_t i = 1; i < reference.size(); ++i) {
    if (reference[i] == '%' && i + 2 < reference.size() && hex_value(reference[i + 1]) >= 0 &&
        hex_value(reference[i + 2]) >= 0) {
      pointer += static_cast<char>(hex_value(reference[i + 1]) * 16 + hex_value(reference[i + 2]));
      i += 2;
    } else {
      pointer += reference[i];
    }
  }
  if (!pointer.empty() && pointer.front() != '/') return std::nullopt;
  return pointer;
}

std::optional<element> resolve_pointer(element root, std::string_view pointer) {
  element at = root;
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    const std::size_t end = std::min(pointer.find('/'), pointer.size());
    std::string token;
    for (std::size_t i = 0; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += pointer[i];
      }
    }
    pointer.remove_prefix(end);
    simdjson::dom::object object;
    simdjson::dom::array array;
    if (at.get_object().get(object) == simdjson::SUCCESS) {
      if (object.at_key(token).get(at) != simdjson::SUCCESS) return std::nullopt;
    } else if (at.get_array().get(array) == simdjson::SUCCESS) {
      std::size_t index = 0;
      const auto parsed = std::from_chars(token.data(), token.data() + token.size(), index);
      if (token.empty() || parsed.ptr != token.data() + token.size() ||
          (token.size() > 1 && token.front() == '0')) {
        return std::nullopt;
      }
      if (array.at(index).get(at) != simdjson::SUCCESS) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return at;
}

}  // namespace tern::engine::grammar
