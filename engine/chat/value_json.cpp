#include "engine/chat/value_json.h"

#include "engine/json_parse_count.h"
#include "engine/json_string.h"
#include "engine/json_syntax.h"

#include <cmath>

namespace tern::engine::chat {

namespace {

// Deeper JSON than this is refused: values are walked recursively when printed and compared.
constexpr int kMaxJsonDepth = 256;

Expected<Value> convert(simdjson::dom::element element, int depth) {
  if (depth > kMaxJsonDepth) {
    return Error{"JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  }
  switch (element.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return Value::none();
    case simdjson::dom::element_type::BOOL: {
      bool b = false;
      if (element.get_bool().get(b)) return Error{"bad JSON boolean"};
      return Value::boolean(b);
    }
    case simdjson::dom::element_type::INT64: {
      std::int64_t i = 0;
      if (element.get_int64().get(i)) return Error{"bad JSON integer"};
      return Value::integer(i);
    }
    case simdjson::dom::element_type::UINT64: {
      std::uint64_t u = 0;
      if (element.get_uint64().get(u)) return Error{"bad JSON integer"};
      return Value::floating(static_cast<double>(u));
    }
    case simdjson::dom::element_type::DOUBLE: {
      double d = 0;
      if (element.get_double().get(d)) return Error{"bad JSON number"};
      return Value::floating(d);
    }
    case simdjson::dom::element_type::STRING: {
      std::string_view s;
      if (element.get_string().get(s)) return Error{"bad JSON string"};
      return Value::string(std::string(s));
    }
    case simdjson::dom::element_type::ARRAY: {
      simdjson::dom::array array;
      if (element.get_array().get(array)) return Error{"bad JSON array"};
      ValueList items;
      for (simdjson::dom::element child : array) {
        Expected<Value> item = convert(child, depth + 1);
        if (!item) return item;
        items.push_back(std::move(item).value());
      }
      return Value::list(std::move(items));
    }
    case simdjson::dom::element_type::OBJECT: {
      simdjson::dom::object object;
      if (element.get_object().get(object)) return Error{"bad JSON object"};
      ValueDict entries;
      for (simdjson::dom::key_value_pair field : object) {
        Expected<Value> item = convert(field.value, depth + 1);
        if (!item) return item;
        entries.set(std::string(field.key), std::move(item).value());
      }
      return Value::dict(std::move(entries));
    }
  }
  return Error{"unknown JSON element"};
}

Status write_json(std::string& out, const Value& value, int indent, int level) {
  if (level > kMaxJsonDepth) return Error{"tojson: value nested too deeply"};
  auto newline = [&](int at_level) {
    out += '\n';
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(at_level), ' ');
  };
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      out += "null";
      return {};
    case Value::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return {};
    case Value::Kind::kInt:
      out += std::to_string(value.as_int());
      return {};
    case Value::Kind::kFloat: {
      double d = value.as_float();
      // json.dumps spells the non-finite floats as JavaScript does.
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        out += format_python_float(d);
      }
      return {};
    }
    case Value::Kind::kString:
      append_json_string(out, value.as_string());
      return {};
    case Value::Kind::kList: {
      const ValueList& items = value.as_list();
      if (items.empty()) {
        out += "[]";
        return {};
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        if (Status status = write_json(out, items[i], indent, level + 1); !status) return status;
      }
      if (indent >= 0) newline(level);
      out += ']';
      return {};
    }
    case Value::Kind::kDict: {
      const ValueDict& entries = value.as_dict();
      if (entries.empty()) {
        out += "{}";
        return {};
      }
      out += '{';
      bool first = true;
      for (const auto& [key, item] : entries) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) newline(level + 1);
        append_json_string(out, key);
        out += ": ";
        if (Status status = write_json(out, item, indent, level + 1); !status) return status;
      }
      if (indent >= 0) newline(level);
      out += '}';
      return {};
    }
    case Value::Kind::kCallable:
      return Error{"tojson: a function is not JSON serializable"};
  }
  return {};
}

}  // namespace

Expected<Value> from_json(simdjson::dom::element element) {
  return convert(element, 0);
}

Expected<Value> parse_json_value(std::string_view json_text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json_text);
  count_json_parse();
  simdjson::dom::element root;
  if (auto error = parser.parse(padded).get(root); error) {
    return Error{describe_json_error(
        json_text, std::string("invalid JSON: ") + simdjson::error_message(error))};
  }
  return from_json(root);
}

Expected<std::string> to_json(const Value& value, int indent) {
  std::string out;
  if (Status status = write_json(out, value, indent, 0); !status) return Error{status.message()};
  return out;
}

}  // namespace tern::engine::chat
