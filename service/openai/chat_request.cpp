#include "service/openai/chat_request.h"

#include <fmt/format.h>

#include "service/openai/chat_messages_field.h"
#include "service/openai/sampling_fields.h"
#include "service/openai/structured_output_fields.h"
#include "service/openai/unimplemented_fields.h"

namespace tern::service::openai {
namespace {

std::optional<ChatRole> parse_role(std::string_view name) {
  if (name == "system") return ChatRole::system;
  if (name == "developer") return ChatRole::developer;
  if (name == "user") return ChatRole::user;
  if (name == "assistant") return ChatRole::assistant;
  if (name == "tool") return ChatRole::tool;
  return std::nullopt;
}

json::Check read_content(const json::element& value, const std::string& param,
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
  json::array parts;
  if (value.get_array().get(parts) != simdjson::SUCCESS) {
    return json::wrong_type(param, "string or array of content parts", value);
  }
  std::string joined;
  std::size_t index = 0;
  for (json::element part : parts) {
    const std::string part_param = fmt::format("{}[{}]", param, index);
    json::object fields;
    if (part.get_object().get(fields) != simdjson::SUCCESS) {
      return json::wrong_type(part_param, "object", part);
    }
    std::string_view type;
    if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
      return invalid_request(part_param + ".type", "Each content part needs a string 'type'",
                             "invalid_type");
    }
    if (type != "text" && type != "input_text") {
      return invalid_request(part_param + ".type",
                             fmt::format("Content parts of type '{}' are not supported; only "
                                         "'text' is",
                                         type),
                             "invalid_value");
    }
    json::element text_value;
    if (fields["text"].get(text_value) != simdjson::SUCCESS) {
      return invalid_request(part_param + ".text", "A text content part needs 'text'",
                             "missing_required_parameter");
    }
    std::string part_text;
    if (json::Check error = json::read_string(text_value, part_param + ".text", part_text)) {
      return error;
    }
    if (index > 0) joined += '\n';
    joined += part_text;
    ++index;
  }
  content = std::move(joined);
  return std::nullopt;
}

json::Check read_message(const json::element& value, std::size_t index, ChatMessage& message) {
  const std::string param = fmt::format("messages[{}]", index);
  json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return json::wrong_type(param, "object", value);
  }
  bool has_role = false;
  bool has_content = false;
  for (auto [key, field] : fields) {
    if (key == "role") {
      std::string role;
      if (json::Check error = json::read_string(field, param + ".role", role)) return error;
      const auto parsed = parse_role(role);
      if (!parsed) {
        return invalid_request(
            param + ".role",
            fmt::format("Invalid role '{}': expected system, developer, user, assistant or tool",
                        role),
            "invalid_value");
      }
      message.role = *parsed;
      has_role = true;
    } else if (key == "content") {
      if (json::Check error = read_content(field, param + ".content", message.content)) {
        return error;
      }
      has_content = !field.is_null();
    } else if (key == "name") {
      if (field.is_null()) continue;
      if (json::Check error = json::read_string(field, param + ".name", message.name)) {
        return error;
      }
    } else if (key == "tool_calls") {
      if (field.is_null()) continue;
      if (!field.is_array()) return json::wrong_type(param + ".tool_calls", "array", field);
      message.tool_calls_json = json::to_json(field);
    } else if (key == "tool_call_id") {
      if (field.is_null()) continue;
      if (json::Check error =
              json::read_string(field, param + ".tool_call_id", message.tool_call_id)) {
        return error;
      }
    } else if (key == "reasoning_content") {
      if (field.is_null()) continue;
      if (json::Check error =
              json::read_string(field, param + ".reasoning_content", message.reasoning_content)) {
        return error;
      }
    }
  }
  if (!has_role) {
    return invalid_request(param + ".role", "Each message needs a 'role'",
                           "missing_required_parameter");
  }
  // Only an assistant turn may leave content out (when it calls tools instead).
  if (!has_content && message.role != ChatRole::assistant) {
    return invalid_request(param + ".content",
                           fmt::format("A {} message needs 'content'", role_name(message.role)),
                           "missing_required_parameter");
  }
  return std::nullopt;
}

}  // namespace

std::string_view role_name(ChatRole role) {
  switch (role) {
    case ChatRole::system:
      return "system";
    case ChatRole::developer:
      return "developer";
    case ChatRole::user:
      return "user";
    case ChatRole::assistant:
      return "assistant";
    case ChatRole::tool:
      return "tool";
  }
  return "user";
}

json::Check read_chat_messages(const json::element& value, std::vector<ChatMessage>& messages) {
  json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return json::wrong_type("messages", "array", value);
  }
  if (items.size() == 0) {
    return invalid_request("messages", "'messages' must contain at least one message",
                           "invalid_value");
  }
  messages.clear();
  messages.reserve(items.size());
  std::size_t index = 0;
  for (json::element item : items) {
    ChatMessage& message = messages.emplace_back();
    if (json::Check error = read_message(item, index++, message)) return error;
  }
  return std::nullopt;
}

json::Check read_tools(const json::element& value, std::string& tools_json) {
  json::array tools;
  if (value.get_array().get(tools) != simdjson::SUCCESS) {
    return json::wrong_type("tools", "array", value);
  }
  std::size_t index = 0;
  for (json::element tool : tools) {
    const std::string param = fmt::format("tools[{}]", index++);
    json::object fields;
    if (tool.get_object().get(fields) != simdjson::SUCCESS) {
      return json::wrong_type(param, "object", tool);
    }
    json::object function;
    std::string_view name;
    if (fields["function"].get_object().get(function) != simdjson::SUCCESS ||
        function["name"].get_string().get(name) != simdjson::SUCCESS) {
      return invalid_request(param + ".function.name", "Each tool needs a function with a name",
                             "missing_required_parameter");
    }
  }
  tools_json = json::to_json(value);
  return std::nullopt;
}

json::Check read_tool_choice(const json::element& value, ChatCompletionRequest& request) {
  std::string_view mode;
  if (value.get_string().get(mode) == simdjson::SUCCESS) {
    if (mode != "none" && mode != "auto" && mode != "required") {
      return invalid_request(
          "tool_choice",
          fmt::format("Invalid value for 'tool_choice': '{}' is not none, auto or required", mode),
          "invalid_value");
    }
    request.tool_call_required = mode == "required";
  } else if (value.is_object()) {
    std::string_view name;
    if (value["function"]["name"].get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      return invalid_request("tool_choice.function.name",
                             "'tool_choice' as an object needs {\"type\": \"function\", "
                             "\"function\": {\"name\": ...}}",
                             "missing_required_parameter");
    }
    request.tool_call_required = true;
    request.required_tool.assign(name);
  } else {
    return json::wrong_type("tool_choice", "string or object", value);
  }
  request.tool_choice_json = json::to_json(value);
  return std::nullopt;
}

json::Check read_template_kwargs(const json::element& value, std::string& kwargs_json) {
  if (!value.is_object()) return json::wrong_type("chat_template_kwargs", "object", value);
  kwargs_json = json::to_json(value);
  return std::nullopt;
}

json::Check read_reasoning_effort(const json::element& value, std::string_view param,
                                  std::optional<int>& budget) {
  std::string_view effort;
  if (value.get_string().get(effort) != simdjson::SUCCESS) {
    return json::wrong_type(std::string(param), "string", value);
  }
  if (effort == "none" || effort == "minimal") {
    budget = 0;
  } else if (effort == "low") {
    budget = kLowReasoningEffortTokens;
  } else if (effort == "medium") {
    budget = kMediumReasoningEffortTokens;
  } else if (effort == "high" || effort == "xhigh") {
    budget.reset();
  } else {
    return invalid_request(std::string(param),
                           fmt::format("Invalid value for '{}': '{}' is not none, minimal, low, "
                                       "medium, high or xhigh",
                                       param, effort),
                           "invalid_value");
  }
  return std::nullopt;
}

ApiResult<ChatCompletionRequest> parse_chat_completion_request(std::string_view body) {
  auto root = json::parse_object_body(body);
  if (!root) return root.error();
  ChatCompletionRequest request;
  bool has_messages = false;
  for (auto [key, value] : *root) {
    json::Check error;
    if (read_sampling_field(key, value, request.sampling, error)) {
      // read above
    } else if (key == "messages") {
      error = read_chat_messages(value, request.messages);
      has_messages = true;
    } else if (value.is_null()) {
      continue;  // every other field is optional, and null means "not given"
    } else if (key == "model") {
      error = json::read_string(value, key, request.model);
    } else if (key == "stream") {
      error = json::read_bool(value, key, request.stream);
    } else if (key == "stream_options") {
      error = read_stream_options(value, request.include_usage);
    } else if (key == "logprobs") {
      error = json::read_bool(value, key, request.logprobs);
    } else if (key == "top_logprobs") {
      error = json::read_int(value, key, 0, kMaxTopLogprobs, request.top_logprobs);
    } else if (key == "user") {
      error = json::read_string(value, key, request.user);
    } else if (key == "tools") {
      error = read_tools(value, request.tools_json);
    } else if (key == "tool_choice") {
      error = read_tool_choice(value, request);
    } else if (key == "parallel_tool_calls") {
      error = json::read_bool(value, key, request.parallel_tool_calls);
    } else if (key == "chat_template_kwargs") {
      error = read_template_kwargs(value, request.chat_template_kwargs_json);
    } else if (key == "reasoning_effort") {
      error = read_reasoning_effort(value, key, request.reasoning_budget_tokens);
    } else if (key == "add_generation_prompt") {
      error = json::read_bool(value, key, request.add_generation_prompt);
    } else if (key == "continue_final_message") {
      error = json::read_bool(value, key, request.continue_final_message);
    } else if (read_structured_output_field(key, value, request.structured_output, error)) {
      // read above
    } else {
      error = refuse_unimplemented_field(key, value);
    }
    if (error) return *std::move(error);
  }
  if (!has_messages) {
    return invalid_request("messages", "Missing required parameter: 'messages'",
                           "missing_required_parameter");
  }
  if (request.top_logprobs > 0 && !request.logprobs) {
    return invalid_request("top_logprobs", "'top_logprobs' requires 'logprobs' to be true",
                           "invalid_value");
  }
  if (json::Check error = validate_sampling(request.sampling)) return *std::move(error);
  return request;
}

}  // namespace tern::service::openai
