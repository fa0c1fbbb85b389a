#include "service/responses/responses_input.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "service/api/tool_values.h"

namespace tern::service::responses {
namespace {

using api::ChatMessage;
using api::ChatRole;
using api::invalid_request;

void append_line(std::string& text, std::string_view more, bool& has_text) {
  if (has_text) text += '\n';
  text += more;
  has_text = true;
}

// Collects items into chat turns. Consecutive assistant pieces (reasoning, text, calls) form one
// assistant message, as chat templates expect: text and calls side by side, reasoning first.
class Conversation {
 public:
  explicit Conversation(std::vector<api::ChatMessage>& messages) : messages_(messages) {}

  void add(api::ChatMessage message) {
    flush();
    reasoning_.reset();  // a reasoning item answered by no assistant turn
    messages_.push_back(std::move(message));
  }

  void add_assistant_text(std::string text) {
    if (!calls_.empty()) flush();
    api::ChatMessage& turn = assistant();
    bool has_text = turn.content.has_value();
    std::string content = turn.content.value_or("");
    append_line(content, text, has_text);
    turn.content = std::move(content);
  }

  void add_call(engine::chat::Value call) {
    assistant();
    calls_.push_back(std::move(call));
  }

  void add_reasoning(std::string text) {
    flush();
    if (reasoning_) {
      *reasoning_ += '\n';
      *reasoning_ += text;
    } else {
      reasoning_ = std::move(text);
    }
  }

  void flush() {
    if (!turn_) return;
    if (!calls_.empty()) turn_->tool_calls = engine::chat::Value::list(std::move(calls_));
    messages_.push_back(std::move(*turn_));
    turn_.reset();
    calls_.clear();
  }

 private:
  api::ChatMessage& assistant() {
    if (!turn_) {
      turn_.emplace();
      turn_->role = api::ChatRole::assistant;
      if (reasoning_) turn_->reasoning_content = std::move(*reasoning_);
      reasoning_.reset();
    }
    return *turn_;
  }

  std::vector<api::ChatMessage>& messages_;
  std::optional<api::ChatMessage> turn_;  // the assistant turn being built
  engine::chat::ValueList calls_;         // its tool calls
  std::optional<std::string> reasoning_;
};

api::json::Check read_required_string(api::json::object& fields, std::string_view name,
                                      const std::string& param, std::string& out) {
  api::json::element value;
  if (fields[name].get(value) != simdjson::SUCCESS || value.is_null()) {
    return api::invalid_request(fmt::format("{}.{}", param, name),
                                fmt::format("Missing required field '{}'", name),
                                "missing_required_parameter");
  }
  return api::json::read_string(value, fmt::format("{}.{}", param, name), out);
}

// A string, or parts whose `text` is taken when their type is one of `text_types`.
api::json::Check read_text_parts(const api::json::element& value, const std::string& param,
                                 std::initializer_list<std::string_view> text_types,
                                 std::string& out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    out = text;
    return std::nullopt;
  }
  api::json::array parts;
  if (value.get_array().get(parts) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "string or array of content parts", value);
  }
  out.clear();
  bool has_text = false;
  std::size_t index = 0;
  for (api::json::element part : parts) {
    const std::string part_param = fmt::format("{}[{}]", param, index++);
    api::json::object fields;
    if (part.get_object().get(fields) != simdjson::SUCCESS) {
      return api::json::wrong_type(part_param, "object", part);
    }
    std::string type;
    if (api::json::Check error = read_required_string(fields, "type", part_param, type))
      return error;
    if (std::find(text_types.begin(), text_types.end(), type) == text_types.end()) {
      const bool media = type == "input_image" || type == "input_file" || type == "input_audio";
      return api::invalid_request(
          part_param + ".type",
          media ? fmt::format("Content parts of type '{}' are not supported: tern serves "
                              "text-only models",
                              type)
                : fmt::format("Content parts of type '{}' are not supported here", type),
          "invalid_value");
    }
    std::string part_text;
    if (api::json::Check error = read_required_string(fields, "text", part_param, part_text)) {
      return error;
    }
    append_line(out, part_text, has_text);
  }
  return std::nullopt;
}

api::json::Check read_message(api::json::object& fields, const std::string& param,
                              Conversation& conversation) {
  std::string role;
  if (api::json::Check error = read_required_string(fields, "role", param, role)) return error;
  api::json::element content;
  if (fields["content"].get(content) != simdjson::SUCCESS || content.is_null()) {
    return api::invalid_request(param + ".content", "Each message needs 'content'",
                                "missing_required_parameter");
  }
  std::string text;
  if (api::json::Check error = read_text_parts(content, param + ".content",
                                               {"input_text", "output_text", "text"}, text)) {
    return error;
  }
  if (role == "assistant") {
    conversation.add_assistant_text(std::move(text));
    return std::nullopt;
  }
  api::ChatMessage message;
  if (role == "user") {
    message.role = api::ChatRole::user;
  } else if (role == "system") {
    message.role = api::ChatRole::system;
  } else if (role == "developer") {
    message.role = api::ChatRole::developer;
  } else {
    return api::invalid_request(
        param + ".role",
        fmt::format("Invalid role '{}': expected user, system, developer or assistant", role),
        "invalid_value");
  }
  message.content = std::move(text);
  conversation.add(std::move(message));
  return std::nullopt;
}

// {"id": call_id, "type": "function", "function": {"name", "arguments"}}, as chat messages
// carry tool calls; arguments that are JSON text of an object become that object.
api::json::Check read_function_call(api::json::object& fields, const std::string& param,
                                    Conversation& conversation) {
  std::string call_id;
  std::string name;
  std::string arguments;
  if (api::json::Check error = read_required_string(fields, "call_id", param, call_id))
    return error;
  if (api::json::Check error = read_required_string(fields, "name", param, name)) return error;
  if (api::json::Check error = read_required_string(fields, "arguments", param, arguments)) {
    return error;
  }
  conversation.add_call(
      api::function_call(std::move(call_id), std::move(name), api::parsed_arguments(arguments)));
  return std::nullopt;
}

api::json::Check read_function_call_output(api::json::object& fields, const std::string& param,
                                           Conversation& conversation) {
  api::ChatMessage result;
  result.role = api::ChatRole::tool;
  if (api::json::Check error =
          read_required_string(fields, "call_id", param, result.tool_call_id)) {
    return error;
  }
  api::json::element output;
  if (fields["output"].get(output) != simdjson::SUCCESS || output.is_null()) {
    return api::invalid_request(param + ".output", "Missing required field 'output'",
                                "missing_required_parameter");
  }
  std::string text;
  if (api::json::Check error =
          read_text_parts(output, param + ".output", {"input_text", "output_text"}, text)) {
    return error;
  }
  result.content = std::move(text);
  conversation.add(std::move(result));
  return std::nullopt;
}

// The reasoning's own text when the item has it; else its summary. encrypted_content is
// OpenAI's own and means nothing to another model.
api::json::Check read_reasoning(api::json::object& fields, const std::string& param,
                                Conversation& conversation) {
  std::string text;
  for (const std::string_view key : {"content", "summary"}) {
    api::json::element parts;
    if (fields[key].get(parts) != simdjson::SUCCESS || parts.is_null()) continue;
    const std::string_view type = key == "content" ? "reasoning_text" : "summary_text";
    if (!parts.is_array())
      return api::json::wrong_type(fmt::format("{}.{}", param, key), "array", parts);
    if (api::json::Check error =
            read_text_parts(parts, fmt::format("{}.{}", param, key), {type}, text)) {
      return error;
    }
    if (!text.empty()) break;
  }
  if (!text.empty()) conversation.add_reasoning(std::move(text));
  return std::nullopt;
}

api::json::Check read_item(const api::json::element& value, std::size_t index,
                           Conversation& conversation) {
  const std::string param = fmt::format("input[{}]", index);
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "object", value);
  }
  std::string type = "message";  // an "easy input message" leaves the type out
  api::json::element type_value;
  if (fields["type"].get(type_value) == simdjson::SUCCESS && !type_value.is_null()) {
    if (api::json::Check error = api::json::read_string(type_value, param + ".type", type))
      return error;
  }
  if (type == "message") return read_message(fields, param, conversation);
  if (type == "function_call") return read_function_call(fields, param, conversation);
  if (type == "function_call_output") {
    return read_function_call_output(fields, param, conversation);
  }
  if (type == "reasoning") return read_reasoning(fields, param, conversation);
  return api::invalid_request(param + ".type",
                              fmt::format("Input items of type '{}' are not supported: tern takes "
                                          "message, function_call, function_call_output and "
                                          "reasoning items",
                                          type),
                              "invalid_value");
}

}  // namespace

api::json::Check read_input(const api::json::element& value,
                            std::vector<api::ChatMessage>& messages) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    api::ChatMessage message;
    message.role = api::ChatRole::user;
    message.content = std::string(text);
    messages.push_back(std::move(message));
    return std::nullopt;
  }
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("input", "string or array of input items", value);
  }
  Conversation conversation(messages);
  std::size_t index = 0;
  for (api::json::element item : items) {
    if (api::json::Check error = read_item(item, index++, conversation)) return error;
  }
  conversation.flush();
  return std::nullopt;
}

}  // namespace tern::service::responses
