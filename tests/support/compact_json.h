#pragma once

// A template value as compact JSON (no spaces, keys in order), so tests can state what a door
// read into a request's tools, tool calls and kwargs as one line of JSON. Undefined is "".
#include <string>

#include "engine/chat/value.h"
#include "engine/json_string.h"

namespace tern::testing {

inline void append_compact_json(std::string& out, const engine::chat::Value& value) {
  using Kind = engine::chat::Value::Kind;
  switch (value.kind()) {
    case Kind::kUndefined:
    case Kind::kCallable:
      return;
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(value.as_int());
      return;
    case Kind::kFloat:
      out += engine::chat::format_python_float(value.as_float());
      return;
    case Kind::kString:
      append_json_string(out, value.as_string());
      return;
    case Kind::kList: {
      out += '[';
      bool first = true;
      for (const engine::chat::Value& item : value.as_list()) {
        if (!first) out += ',';
        first = false;
        append_compact_json(out, item);
      }
      out += ']';
      return;
    }
    case Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.as_dict()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_compact_json(out, item);
      }
      out += '}';
      return;
    }
  }
}

inline std::string compact_json(const engine::chat::Value& value) {
  std::string out;
  append_compact_json(out, value);
  return out;
}

}  // namespace tern::testing
