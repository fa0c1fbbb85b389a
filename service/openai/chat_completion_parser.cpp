#include "service/openai/chat_completion_parser.h"

#include <fmt/format.h>

#include "service/api/reasoning_effort.h"
#include "service/api/tool_values.h"
#include "service/openai/chat_messages_field.h"
#include "service/openai/generation_fields.h"
#include "service/openai/sampling_fields.h"
#include "service/openai/unimplemented_fields.h"

namespace tern::service::openai {
namespace {

std::optional<api::ChatRole> parse_role(std::string_view name) {
  if (name == "system") return api::ChatRole::system;
  if (name == "developer") return api::ChatRole::developer;
  if (name == "user") return api::ChatRole::user;
  if (name == "assistant") return api::ChatRole::assistant;
  if (name == "tool") return api::ChatRole::tool;
  return std::nullopt;
}

api::json::Check read_content(const api::json::element& value, const std::string& param,
                              std::optional<std::string>& content) {
  if (value.is_null()) {
    content.reset();
    return std::nullopt;
  }
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    content.emplace(text);
    return std::nullopt;
  }
  api::json::array parts;
  if (value.get_array().get(parts) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "string or array of content parts", value);
  }
  std::string joined;
  std::size_t index = 0;
  for (api::json::element part : parts) {
    const std::string part_param = fmt::format("{}[{}]", param, index);
    api::json::object fields;
    if (part.get_object().get(fields) != simdjson::SUCCESS) {
      return api::json::wrong_type(part_param, "object", part);
    }
    std::string_view type;
    if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
      return api::invalid_request(part_param + ".type", "Each content part needs a string 'type'",
                                  "invalid_type");
    }
    if (type != "text" && type != "input_text") {
      return api::invalid_request(part_param + ".type",
                                  fmt::format("Content parts of type '{}' are not supported; only "
                                              "'text' is",
                                              type),
                                  "invalid_value");
    }
    api::json::element text_value;
    if (fields["text"].get(text_value) != simdjson::SUCCESS) {
      return api::invalid_request(part_param + ".text", "A text content part needs 'text'",
                                  "missing_required_parameter");
    }
    std::string part_text;
    if (api::json::Check error =
            api::json::read_string(text_value, part_param + ".text", part_text)) {
      return error;
    }
    if (index > 0) joined += '\n';
    joined += part_text;
    ++index;
  }
  content = std::move(joined);
  return std::nullopt;
}

api::json::Check read_message(const api::json::element& value, std::size_t index,
                              api::ChatMessage& message) {
  const std::string param = fmt::format("messages[{}]", index);
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type(param, "object", value);
  }
  bool has_role = false;
  bool has_content = false;
  for (auto [key, field] : fields) {
    if (key == "role") {
      std::string role;
      if (api::json::Check error = api::json::read_string(field, param + ".role", role))
        return error;
      const auto parsed = parse_role(role);
      if (!parsed) {
        return api::invalid_request(
            param + ".role",
            fmt::format("Invalid role '{}': expected system, developer, user, assistant or tool",
                        role),
            "invalid_value");
      }
      message.role = *parsed;
      has_role = true;
    } else if (key == "content") {
      if (api::json::Check error = read_content(field, param + ".content", message.content)) {
        return error;
      }
      has_content = !field.is_null();
    } else if (key == "name") {
      if (field.is_null()) continue;
      if (api::json::Check error = api::json::read_string(field, param + ".name", message.name)) {
        return error;
      }
    } else if (key == "tool_calls") {
      if (field.is_null()) continue;
      if (!field.is_array()) return api::json::wrong_type(param + ".tool_calls", "array", field);
      auto calls = api::value_of(field, param + ".tool_calls");
      if (!calls) return calls.error();
      message.tool_calls = api::with_parsed_arguments(*calls);
    } else if (key == "tool_call_id") {
      if (field.is_null()) continue;
      if (api::json::Check error =
              api::json::read_string(field, param + ".tool_call_id", message.tool_call_id)) {
        return error;
      }
    } else if (key == "reasoning_content") {
      if (field.is_null()) continue;
      if (api::json::Check error = api::json::read_string(field, param + ".reasoning_content",
                                                          message.reasoning_content)) {
        return error;
      }
    }
  }
  if (!has_role) {
    return api::invalid_request(param + ".role", "Each message needs a 'role'",
                                "missing_required_parameter");
  }
  // Only an assistant turn may leave content out (when it calls tools instead).
  if (!has_content && message.role != api::ChatRole::assistant) {
    return api::invalid_request(
        param + ".content",
        fmt::format("A {} message needs 'content'", api::role_name(message.role)),
        "missing_required_parameter");
  }
  return std::nullopt;
}

}  // namespace

api::json::Check read_chat_messages(const api::json::element& value,
                                    std::vector<api::ChatMessage>& messages) {
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("messages", "array", value);
  }
  if (items.size() == 0) {
    return api::invalid_request("messages", "'messages' must contain at least one message",
                                "invalid_value");
  }
  messages.clear();
  messages.reserve(items.size());
  std::size_t index = 0;
  for (api::json::element item : items) {
    api::ChatMessage& message = messages.emplace_back();
    if (api::json::Check error = read_message(item, index++, message)) return error;
  }
  return std::nullopt;
}

api::json::Check read_tools(const api::json::element& value, engine::chat::Value& tools_value) {
  api::json::array tools;
  if (value.get_array().get(tools) != simdjson::SUCCESS) {
    return api::json::wrong_type("tools", "array", value);
  }
  std::size_t index = 0;
  for (api::json::element tool : tools) {
    const std::string param = fmt::format("tools[{}]", index++);
    api::json::object fields;
    if (tool.get_object().get(fields) != simdjson::SUCCESS) {
      return api::json::wrong_type(param, "object", tool);
    }
    api::json::object function;
    std::string_view name;
    if (fields["function"].get_object().get(function) != simdjson::SUCCESS ||
        function["name"].get_string().get(name) != simdjson::SUCCESS) {
      return api::invalid_request(param + ".function.name",
                                  "Each tool needs a function with a name",
                                  "missing_required_parameter");
    }
  }
  auto read = api::value_of(value, "tools");
  if (!read) return read.error();
  tools_value = std::move(*read);
  return std::nullopt;
}

api::json::Check read_tool_choice(const api::json::element& value, api::ChatRequest& request) {
  std::string_view mode;
  if (value.get_string().get(mode) == simdjson::SUCCESS) {
    if (mode != "none" && mode != "auto" && mode != "required") {
      return api::invalid_request(
          "tool_choice",
          fmt::format("Invalid value for 'tool_choice': '{}' is not none, auto or required", mode),
          "invalid_value");
    }
    request.tool_choice = mode == "none"       ? api::ToolChoice::none
                          : mode == "required" ? api::ToolChoice::required
                                               : api::ToolChoice::automatic;
  } else if (value.is_object()) {
    std::string_view name;
    if (value["function"]["name"].get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      return api::invalid_request("tool_choice.function.name",
                                  "'tool_choice' as an object needs {\"type\": \"function\", "
                                  "\"function\": {\"name\": ...}}",
                                  "missing_required_parameter");
    }
    request.tool_choice = api::ToolChoice::required;
    request.required_tool.assign(name);
  } else {
    return api::json::wrong_type("tool_choice", "string or object", value);
  }
  return std::nullopt;
}

api::json::Check read_template_kwargs(const api::json::element& value,
                                      engine::chat::Value& kwargs) {
  if (!value.is_object()) return api::json::wrong_type("chat_template_kwargs", "object", value);
  auto read = api::value_of(value, "chat_template_kwargs");
  if (!read) return read.error();
  kwargs = std::move(*read);
  return std::nullopt;
}

api::ApiResult<api::ChatRequest> parse_chat_completion_request(std::string_view body) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  api::ChatRequest request;
  bool has_messages = false;
  for (auto [key, value] : *root) {
    api::json::Check error;
    if (key == "messages") {
      error = read_chat_messages(value, request.messages);
      has_messages = true;
    } else if (read_generation_field(key, value, request, error)) {
      // read above
    } else if (value.is_null()) {
      continue;  // every other field is optional, and null means "not given"
    } else if (key == "logprobs") {
      error = api::json::read_bool(value, key, request.logprobs);
    } else if (key == "top_logprobs") {
      error = api::json::read_int(value, key, 0, api::kMaxTopLogprobs, request.top_logprobs);
    } else if (key == "tools") {
      error = read_tools(value, request.tools);
    } else if (key == "tool_choice") {
      error = read_tool_choice(value, request);
    } else if (key == "parallel_tool_calls") {
      error = api::json::read_bool(value, key, request.parallel_tool_calls);
    } else if (key == "chat_template_kwargs") {
      error = read_template_kwargs(value, request.chat_template_kwargs);
    } else if (key == "reasoning_effort") {
      error = api::read_reasoning_effort(value, key, request.reasoning_budget_tokens);
    } else if (key == "add_generation_prompt") {
      error = api::json::read_bool(value, key, request.add_generation_prompt);
    } else if (key == "continue_final_message") {
      error = api::json::read_bool(value, key, request.continue_final_message);
    } else {
      error = refuse_unimplemented_field(key, value);
    }
    if (error) return *std::move(error);
  }
  if (!has_messages) {
    return api::invalid_request("messages", "Missing required parameter: 'messages'",
                                "missing_required_parameter");
  }
  if (request.top_logprobs > 0 && !request.logprobs) {
    return api::invalid_request("top_logprobs", "'top_logprobs' requires 'logprobs' to be true",
                                "invalid_value");
  }
  if (api::json::Check error = validate_sampling(request.sampling)) return *std::move(error);
  return request;
}

}  // namespace tern::service::openai
