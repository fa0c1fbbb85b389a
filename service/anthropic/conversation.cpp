#include "service/anthropic/conversation.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "service/api/tool_values.h"

namespace tern::service::anthropic {
namespace {

using api::ChatMessage;
using api::ChatRole;
using api::invalid_request;

// The ids of the tool_use blocks seen so far: a tool_result must answer one of them.
using ToolUseIds = std::set<std::string, std::less<>>;

api::ChatMessage message_of(api::ChatRole role, std::string text) {
  api::ChatMessage message;
  message.role = role;
  message.content = std::move(text);
  return message;
}

// A content block's fields and its `type`.
api::json::Check read_block(const api::json::element& value, const std::string& param,
                            api::json::object& fields, std::string_view& type) {
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "object", value);
  }
  if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
    return api::invalid_request(param + ".type", "Each content block needs a string 'type'",
                                "missing_required_parameter");
  }
  return std::nullopt;
}

// The 400 for a block type this place does not take. Images and documents get their own
// message: the model cannot see them, and silently dropping them would answer another question.
api::ApiError unsupported_block(const std::string& param, std::string_view type,
                                std::string_view where) {
  if (type == "image" || type == "document") {
    return api::invalid_request(param + ".type",
                                fmt::format("Content blocks of type '{}' are not supported: tern "
                                            "serves text-only models (no vision or documents)",
                                            type),
                                "invalid_value");
  }
  return api::invalid_request(
      param + ".type", fmt::format("Content blocks of type '{}' are not supported {}", type, where),
      "invalid_value");
}

api::json::Check read_required_string(api::json::object& fields, std::string_view name,
                                      const std::string& param, std::string& out) {
  api::json::element value;
  if (fields[name].get(value) != simdjson::SUCCESS) {
    return api::invalid_request(fmt::format("{}.{}", param, name),
                                fmt::format("Missing required field '{}'", name),
                                "missing_required_parameter");
  }
  return api::json::read_string(value, fmt::format("{}.{}", param, name), out);
}

void append_line(std::string& text, std::string_view more, bool& has_text) {
  if (has_text) text += '\n';
  text += more;
  has_text = true;
}

// A string, or text blocks joined with "\n" (system prompts, tool results).
api::json::Check read_text(const api::json::element& value, const std::string& param,
                           std::string& out, std::string_view where) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    out = text;
    return std::nullopt;
  }
  api::json::array blocks;
  if (value.get_array().get(blocks) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "string or array of text blocks", value);
  }
  out.clear();
  bool has_text = false;
  std::size_t index = 0;
  for (api::json::element block : blocks) {
    const std::string block_param = fmt::format("{}[{}]", param, index++);
    api::json::object fields;
    std::string_view type;
    if (api::json::Check error = read_block(block, block_param, fields, type)) return error;
    if (type != "text") return unsupported_block(block_param, type, where);
    std::string part;
    if (api::json::Check error = read_required_string(fields, "text", block_param, part))
      return error;
    append_line(out, part, has_text);
  }
  return std::nullopt;
}

// {"id","type":"function","function":{"name","arguments"}}, the input object as the arguments.
api::json::Check read_tool_call(api::json::object& fields, const std::string& param,
                                engine::chat::ValueList& calls, ToolUseIds& tool_use_ids) {
  std::string id;
  std::string name;
  if (api::json::Check error = read_required_string(fields, "id", param, id)) return error;
  tool_use_ids.insert(id);
  if (api::json::Check error = read_required_string(fields, "name", param, name)) return error;
  api::json::element input;
  if (fields["input"].get(input) != simdjson::SUCCESS) {
    return api::invalid_request(param + ".input", "Missing required field 'input'",
                                "missing_required_parameter");
  }
  if (!input.is_object()) return api::json::wrong_type(param + ".input", "object", input);
  auto arguments = api::value_of(input, param + ".input");
  if (!arguments) return arguments.error();
  calls.push_back(api::function_call(std::move(id), std::move(name), std::move(*arguments)));
  return std::nullopt;
}

api::json::Check read_assistant_blocks(const api::json::array& blocks, const std::string& param,
                                       std::vector<api::ChatMessage>& messages,
                                       ToolUseIds& tool_use_ids) {
  api::ChatMessage message;
  message.role = api::ChatRole::assistant;
  std::string text;
  bool has_text = false;
  bool has_reasoning = false;
  engine::chat::ValueList calls;
  std::size_t index = 0;
  for (api::json::element block : blocks) {
    const std::string block_param = fmt::format("{}[{}]", param, index++);
    api::json::object fields;
    std::string_view type;
    if (api::json::Check error = read_block(block, block_param, fields, type)) return error;
    if (type == "text") {
      std::string part;
      if (api::json::Check error = read_required_string(fields, "text", block_param, part)) {
        return error;
      }
      append_line(text, part, has_text);
    } else if (type == "thinking") {
      // The signature only proves the thinking came from Anthropic's API; nothing to check here.
      std::string part;
      if (api::json::Check error = read_required_string(fields, "thinking", block_param, part)) {
        return error;
      }
      append_line(message.reasoning_content, part, has_reasoning);
    } else if (type == "redacted_thinking") {
      continue;  // encrypted by Anthropic: no text a template could show
    } else if (type == "tool_use") {
      if (api::json::Check error = read_tool_call(fields, block_param, calls, tool_use_ids)) {
        return error;
      }
    } else {
      return unsupported_block(block_param, type, "in an assistant message");
    }
  }
  const bool has_calls = !calls.empty();
  if (has_calls) message.tool_calls = engine::chat::Value::list(std::move(calls));
  // An assistant turn that only calls tools has no content, as in OpenAI's form.
  if (has_text || !has_calls) message.content = std::move(text);
  messages.push_back(std::move(message));
  return std::nullopt;
}

api::json::Check read_user_blocks(const api::json::array& blocks, const std::string& param,
                                  std::vector<api::ChatMessage>& messages,
                                  const ToolUseIds& tool_use_ids) {
  std::string text;
  bool has_text = false;
  bool wrote_any = false;
  auto flush_text = [&] {
    if (!has_text) return;
    messages.push_back(message_of(api::ChatRole::user, std::move(text)));
    text.clear();
    has_text = false;
    wrote_any = true;
  };
  std::size_t index = 0;
  for (api::json::element block : blocks) {
    const std::string block_param = fmt::format("{}[{}]", param, index++);
    api::json::object fields;
    std::string_view type;
    if (api::json::Check error = read_block(block, block_param, fields, type)) return error;
    if (type == "text") {
      std::string part;
      if (api::json::Check error = read_required_string(fields, "text", block_param, part)) {
        return error;
      }
      append_line(text, part, has_text);
    } else if (type == "tool_result") {
      flush_text();
      api::ChatMessage result;
      result.role = api::ChatRole::tool;
      if (api::json::Check error =
              read_required_string(fields, "tool_use_id", block_param, result.tool_call_id)) {
        return error;
      }
      std::string content;
      api::json::element value;
      if (fields["content"].get(value) == simdjson::SUCCESS && !value.is_null()) {
        if (api::json::Check error =
                read_text(value, block_param + ".content", content, "in a tool result")) {
          return error;
        }
      }
      // Anthropic's API refuses a result that answers no call; rendered, it would tell the model
      // of a call it never made.
      if (!tool_use_ids.contains(result.tool_call_id)) {
        return api::invalid_request(
            block_param + ".tool_use_id",
            fmt::format("tool_result block answers tool_use_id '{}', which no "
                        "earlier tool_use block has",
                        result.tool_call_id),
            "invalid_value");
      }
      result.content = std::move(content);
      messages.push_back(std::move(result));
      wrote_any = true;
    } else {
      return unsupported_block(block_param, type, "in a user message");
    }
  }
  flush_text();
  if (!wrote_any) messages.push_back(message_of(api::ChatRole::user, std::string()));
  return std::nullopt;
}

api::json::Check read_message(const api::json::element& value, std::size_t index,
                              std::vector<api::ChatMessage>& messages, ToolUseIds& tool_use_ids) {
  const std::string param = fmt::format("messages[{}]", index);
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "object", value);
  }
  std::string role;
  if (api::json::Check error = read_required_string(fields, "role", param, role)) return error;
  if (role != "user" && role != "assistant") {
    return api::invalid_request(
        param + ".role",
        fmt::format("Invalid role '{}': expected user or assistant (the system prompt goes in "
                    "the top-level 'system' field)",
                    role),
        "invalid_value");
  }
  const bool assistant = role == "assistant";
  api::json::element content;
  if (fields["content"].get(content) != simdjson::SUCCESS) {
    return api::invalid_request(param + ".content", "Each message needs 'content'",
                                "missing_required_parameter");
  }
  const std::string content_param = param + ".content";
  std::string_view text;
  if (content.get_string().get(text) == simdjson::SUCCESS) {
    messages.push_back(
        message_of(assistant ? api::ChatRole::assistant : api::ChatRole::user, std::string(text)));
    return std::nullopt;
  }
  api::json::array blocks;
  if (content.get_array().get(blocks) != simdjson::SUCCESS) {
    return api::json::wrong_type(content_param, "string or array of content blocks", content);
  }
  return assistant ? read_assistant_blocks(blocks, content_param, messages, tool_use_ids)
                   : read_user_blocks(blocks, content_param, messages, tool_use_ids);
}

}  // namespace

api::json::Check read_system(const api::json::element& value,
                             std::vector<api::ChatMessage>& messages) {
  std::string text;
  if (api::json::Check error = read_text(value, "system", text, "in the system prompt"))
    return error;
  if (!text.empty()) messages.push_back(message_of(api::ChatRole::system, std::move(text)));
  return std::nullopt;
}

api::json::Check read_messages(const api::json::element& value,
                               std::vector<api::ChatMessage>& messages) {
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("messages", "array", value);
  }
  if (items.size() == 0) {
    return api::invalid_request("messages", "'messages' must contain at least one message",
                                "invalid_value");
  }
  ToolUseIds tool_use_ids;
  std::size_t index = 0;
  for (api::json::element item : items) {
    if (api::json::Check error = read_message(item, index++, messages, tool_use_ids)) return error;
  }
  return std::nullopt;
}

}  // namespace tern::service::anthropic
