#include "engine/chat/tool_call_json.h"

#include <simdjson.h>

#include <algorithm>
#include <cstddef>

#include "engine/chat/marker_scanner.h"
#include "engine/json_syntax.h"

namespace tern::engine::chat {
namespace {

// Past the string literal that opens at text[position]; the text is known to be valid JSON.
std::size_t skip_string(std::string_view text, std::size_t position) {
  for (++position; position < text.size(); ++position) {
    if (text[position] == '\\') {
      ++position;
    } else if (text[position] == '"') {
      return position + 1;
    }
  }
  return text.size();
}

// Past the value that starts at text[position], in text known to be valid JSON.
std::size_t skip_value(std::string_view text, std::size_t position) {
  const char first = text[position];
  if (first == '"') return skip_string(text, position);
  if (first != '{' && first != '[') {
    while (position < text.size() && !is_space(text[position]) &&
           std::string_view(",}]").find(text[position]) == std::string_view::npos) {
      ++position;
    }
    return position;
  }
  std::size_t depth = 0;
  while (position < text.size()) {
    const char c = text[position];
    if (c == '"') {
      position = skip_string(text, position);
      continue;
    }
    ++position;
    if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      break;
    }
  }
  return position;
}

// The text a JSON string literal stands for; simdjson does the unescaping (\u pairs included).
std::optional<std::string> decode_string(std::string_view literal) {
  // Most keys and names hold no escapes: their text is what lies between the quotes.
  if (literal.size() >= 2 && literal.find('\\') == std::string_view::npos) {
    return std::string(literal.substr(1, literal.size() - 2));
  }
  simdjson::dom::parser parser;
  std::string_view value;
  if (parser.parse(literal.data(), literal.size()).get_string().get(value) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  return std::string(value);
}

}  // namespace

bool is_valid_json(std::string_view text) {
  // The grammar check treats a NUL byte as whitespace; no call has one.
  if (text.find('\0') != std::string_view::npos) return false;
  if (!simdjson::validate_utf8(text.data(), text.size())) return false;
  return !find_json_syntax_error(text).has_value();
}

bool is_known_tool(std::string_view name, std::span<const std::string> tool_names) {
  return std::find(tool_names.begin(), tool_names.end(), name) != tool_names.end();
}

std::optional<std::string> read_tool_arguments(std::string_view value) {
  value = trim_space(value);
  if (value.empty() || !is_valid_json(value)) return std::nullopt;
  if (value.front() == '{') return std::string(value);
  if (value.front() != '"') return std::nullopt;
  std::optional<std::string> decoded = decode_string(value);
  if (!decoded) return std::nullopt;
  const std::string_view inner = trim_space(*decoded);
  if (inner.empty() || inner.front() != '{' || !is_valid_json(inner)) return std::nullopt;
  return std::string(inner);
}

std::optional<ParsedToolCall> read_tool_call_object(
    std::string_view text, std::span<const std::string> tool_names,
    std::span<const std::string_view> arguments_keys) {
  text = trim_space(text);
  if (text.empty() || text.front() != '{' || !is_valid_json(text)) return std::nullopt;
  // Walk the members of the (now known valid) object. A repeated key counts as its last value,
  // as Python's json.loads (and so vLLM) reads it.
  std::optional<std::string_view> name_literal;
  std::optional<std::string_view> arguments;
  std::size_t arguments_rank = arguments_keys.size();
  std::size_t position = skip_space(text, 1);
  while (position < text.size() && text[position] == '"') {
    const std::size_t key_end = skip_string(text, position);
    const std::optional<std::string> key = decode_string(text.substr(position, key_end - position));
    const std::size_t value_begin = skip_space(text, skip_space(text, key_end) + 1);  // past ':'
    const std::size_t value_end = skip_value(text, value_begin);
    const std::string_view value = text.substr(value_begin, value_end - value_begin);
    if (key && *key == "name") {
      name_literal = value;
    } else if (key) {
      for (std::size_t rank = 0; rank < arguments_keys.size(); ++rank) {
        if (*key == arguments_keys[rank] && rank <= arguments_rank) {
          arguments = value;
          arguments_rank = rank;
        }
      }
    }
    position = skip_space(text, value_end);
    if (position < text.size() && text[position] == ',') position = skip_space(text, position + 1);
  }
  if (!name_literal || !arguments || name_literal->front() != '"') return std::nullopt;
  std::optional<std::string> name = decode_string(*name_literal);
  if (!name || !is_known_tool(*name, tool_names)) return std::nullopt;
  std::optional<std::string> arguments_text = read_tool_arguments(*arguments);
  if (!arguments_text) return std::nullopt;
  return ParsedToolCall{std::move(*name), std::move(*arguments_text)};
}

}  // namespace tern::engine::chat
