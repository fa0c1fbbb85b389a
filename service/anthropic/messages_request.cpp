#include "service/anthropic/messages_request.h"

#include <limits>

#include <fmt/format.h>

#include "service/anthropic/conversation.h"
#include "service/api/json_writer.h"
#include "service/api/structured_output_fields.h"
#include "service/api/tool_values.h"

namespace tern::service::anthropic {
namespace {

using api::ChatRequest;
using api::invalid_request;
using api::not_implemented;

enum class Door { messages, count_tokens };

// Anthropic's custom tools as OpenAI function tools, the shape chat templates read:
// {"type":"function","function":{"name","description","parameters":input_schema}}.
api::json::Check read_tools(const api::json::element& value, engine::chat::Value& tools_value) {
  api::json::array tools;
  if (value.get_array().get(tools) != simdjson::SUCCESS) {
    return api::json::wrong_type("tools", "array", value);
  }
  engine::chat::ValueList list;
  std::size_t index = 0;
  for (api::json::element tool : tools) {
    const std::string param = fmt::format("tools[{}]", index++);
    api::json::object fields;
    if (tool.get_object().get(fields) != simdjson::SUCCESS) {
      return api::json::wrong_type(param, "object", tool);
    }
    std::string_view type = "custom";
    api::json::element type_value;
    if (fields["type"].get(type_value) == simdjson::SUCCESS && !type_value.is_null() &&
        type_value.get_string().get(type) != simdjson::SUCCESS) {
      return api::json::wrong_type(param + ".type", "string", type_value);
    }
    if (type != "custom") {
      // Server tools (web search, code execution, ...) run on Anthropic's side.
      return api::not_implemented(
          param + ".type", fmt::format("Tools of type '{}' are not supported; tern takes custom "
                                       "tools (name, description, input_schema)",
                                       type));
    }
    std::string_view name;
    if (fields["name"].get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      return api::invalid_request(param + ".name", "Each tool needs a non-empty string 'name'",
                                  "missing_required_parameter");
    }
    api::json::element schema;
    if (fields["input_schema"].get(schema) != simdjson::SUCCESS || !schema.is_object()) {
      return api::invalid_request(param + ".input_schema",
                                  "Each tool needs an object 'input_schema'",
                                  "missing_required_parameter");
    }
    std::string_view description;
    api::json::element description_value;
    engine::chat::Value described;
    if (fields["description"].get(description_value) == simdjson::SUCCESS &&
        !description_value.is_null()) {
      if (description_value.get_string().get(description) != simdjson::SUCCESS) {
        return api::json::wrong_type(param + ".description", "string", description_value);
      }
      described = engine::chat::Value::string(std::string(description));
    }
    auto parameters = api::value_of(schema, param + ".input_schema");
    if (!parameters) return parameters.error();
    list.push_back(api::function_tool(std::string(name), std::move(described), *parameters));
  }
  tools_value = engine::chat::Value::list(std::move(list));
  return std::nullopt;
}

api::json::Check read_tool_choice(const api::json::element& value, api::ChatRequest& request) {
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type("tool_choice", "object", value);
  }
  bool disable_parallel = false;
  if (fields["disable_parallel_tool_use"].get_bool().get(disable_parallel) == simdjson::SUCCESS) {
    request.parallel_tool_calls = !disable_parallel;
  }
  std::string_view type;
  if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
    return api::invalid_request("tool_choice.type", "'tool_choice' needs a string 'type'",
                                "missing_required_parameter");
  }
  if (type == "auto" || type == "none") {
    request.tool_choice = type == "none" ? api::ToolChoice::none : api::ToolChoice::automatic;
    return std::nullopt;
  }
  if (type == "any") {
    request.tool_choice = api::ToolChoice::required;
    return std::nullopt;
  }
  if (type == "tool") {
    std::string_view name;
    if (fields["name"].get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      return api::invalid_request("tool_choice.name", "'tool_choice' of type 'tool' needs a 'name'",
                                  "missing_required_parameter");
    }
    request.tool_choice = api::ToolChoice::required;
    request.required_tool.assign(name);
    return std::nullopt;
  }
  return api::invalid_request(
      "tool_choice.type",
      fmt::format("Invalid 'tool_choice' type '{}': expected auto, any, tool or none", type),
      "invalid_value");
}

engine::chat::Value enable_thinking(bool enabled) {
  engine::chat::ValueDict kwargs;
  kwargs.set("enable_thinking", engine::chat::Value::boolean(enabled));
  return engine::chat::Value::dict(std::move(kwargs));
}

// thinking: {type: enabled, budget_tokens} | {type: adaptive} | {type: disabled}, passed to the
// template as enable_thinking; the budget caps the reasoning tokens.
api::json::Check read_thinking(const api::json::element& value, api::ChatRequest& request) {
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type("thinking", "object", value);
  }
  std::string_view type;
  if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
    return api::invalid_request("thinking.type", "'thinking' needs a string 'type'",
                                "missing_required_parameter");
  }
  if (type == "disabled") {
    request.chat_template_kwargs = enable_thinking(false);
    request.reasoning_budget_tokens.reset();
    return std::nullopt;
  }
  if (type != "enabled" && type != "adaptive") {
    return api::invalid_request(
        "thinking.type",
        fmt::format("Invalid 'thinking' type '{}': expected enabled, adaptive or disabled", type),
        "invalid_value");
  }
  request.chat_template_kwargs = enable_thinking(true);
  request.reasoning_budget_tokens.reset();
  api::json::element budget;
  const bool has_budget =
      fields["budget_tokens"].get(budget) == simdjson::SUCCESS && !budget.is_null();
  if (type == "enabled" && !has_budget) {
    return api::invalid_request("thinking.budget_tokens",
                                "'thinking' of type 'enabled' needs 'budget_tokens'",
                                "missing_required_parameter");
  }
  if (has_budget) {
    int tokens = 0;
    if (api::json::Check error = api::json::read_int(budget, "thinking.budget_tokens", 1,
                                                     api::kMaxTokensLimit, tokens)) {
      return error;
    }
    request.reasoning_budget_tokens = tokens;
  }
  return std::nullopt;
}

api::json::Check read_stop_sequences(const api::json::element& value,
                                     std::vector<std::string>& stop) {
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("stop_sequences", "array of strings", value);
  }
  if (items.size() > static_cast<std::size_t>(api::kMaxStopSequences)) {
    return api::invalid_request("stop_sequences",
                                fmt::format("At most {} stop sequences are allowed, got {}",
                                            api::kMaxStopSequences, items.size()),
                                "invalid_value");
  }
  stop.clear();
  std::size_t index = 0;
  for (api::json::element item : items) {
    const std::string param = fmt::format("stop_sequences[{}]", index++);
    std::string text;
    if (api::json::Check error = api::json::read_string(item, param, text)) return error;
    if (text.empty()) {
      return api::invalid_request(param, "Stop sequences must not be empty", "invalid_value");
    }
    stop.push_back(std::move(text));
  }
  return std::nullopt;
}

// output_config.format (and the older output_format) constrain the answer to a schema;
// output_config.effort only tunes how hard Claude thinks, so it is accepted.
api::json::Check read_output_config(const api::json::element& value,
                                    engine::grammar::GrammarSpec& spec) {
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type("output_config", "object", value);
  }
  api::json::element format;
  if (fields["format"].get(format) == simdjson::SUCCESS && !format.is_null()) {
    return api::read_text_format(format, "output_config.format", spec);
  }
  return std::nullopt;
}

// MCP servers are called by Anthropic's API on the model's behalf; tern calls no tools itself.
api::json::Check check_mcp_servers(const api::json::element& value) {
  api::json::array servers;
  if (value.get_array().get(servers) != simdjson::SUCCESS) {
    return api::json::wrong_type("mcp_servers", "array", value);
  }
  if (servers.size() == 0) return std::nullopt;
  return api::not_implemented("mcp_servers", "'mcp_servers' is not supported: tern calls no tools");
}

api::ApiResult<api::ChatRequest> parse(std::string_view body, Door door) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  api::ChatRequest request;
  std::vector<api::ChatMessage> system;
  bool has_messages = false;
  bool has_max_tokens = false;
  for (auto [key, value] : *root) {
    api::json::Check error;
    if (value.is_null()) continue;  // null means "not given", as for OpenAI's door
    if (key == "model") {
      error = api::json::read_string(value, key, request.model);
    } else if (key == "messages") {
      error = read_messages(value, request.messages);
      has_messages = true;
    } else if (key == "system") {
      error = read_system(value, system);
    } else if (key == "max_tokens") {
      int tokens = 0;
      error = api::json::read_int(value, key, 1, api::kMaxTokensLimit, tokens);
      request.sampling.max_tokens = tokens;
      has_max_tokens = true;
    } else if (key == "stop_sequences") {
      error = read_stop_sequences(value, request.sampling.stop);
    } else if (key == "temperature") {
      double temperature = 0;
      error = api::json::read_number(value, key, 0.0, 1.0, temperature);
      request.sampling.temperature = temperature;
    } else if (key == "top_p") {
      double top_p = 0;
      error = api::json::read_number(value, key, 0.0, 1.0, top_p);
      if (!error && top_p <= 0.0) {
        error = api::invalid_request("top_p", "Invalid value for 'top_p': must be in (0, 1]",
                                     "invalid_value");
      }
      request.sampling.top_p = top_p;
    } else if (key == "top_k") {
      int top_k = 0;
      error = api::json::read_int(value, key, 0, std::numeric_limits<int>::max(), top_k);
      request.sampling.top_k = top_k;
    } else if (key == "stream") {
      error = api::json::read_bool(value, key, request.stream);
    } else if (key == "tools") {
      error = read_tools(value, request.tools);
    } else if (key == "tool_choice") {
      error = read_tool_choice(value, request);
    } else if (key == "thinking") {
      error = read_thinking(value, request);
    } else if (key == "output_format") {
      error = api::read_text_format(value, "output_format", request.structured_output);
    } else if (key == "output_config") {
      error = read_output_config(value, request.structured_output);
    } else if (key == "mcp_servers") {
      error = check_mcp_servers(value);
    }
    // Anything else is ignored: metadata, cache_control, service_tier, container,
    // context_management, inference_geo and fields newer than this parser.
    if (error) return *std::move(error);
  }
  if (!has_messages) {
    return api::invalid_request("messages", "Missing required parameter: 'messages'",
                                "missing_required_parameter");
  }
  if (door == Door::messages && !has_max_tokens) {
    return api::invalid_request("max_tokens", "Missing required parameter: 'max_tokens'",
                                "missing_required_parameter");
  }
  request.messages.insert(request.messages.begin(), std::make_move_iterator(system.begin()),
                          std::make_move_iterator(system.end()));
  // Anthropic's prefill: the answer continues the final assistant message.
  if (const api::ChatMessage& last = request.messages.back();
      last.role == api::ChatRole::assistant && last.tool_calls.is_undefined()) {
    request.continue_final_message = true;
    request.add_generation_prompt = false;
  }
  return request;
}

}  // namespace

api::ApiResult<api::ChatRequest> parse_messages_request(std::string_view body) {
  return parse(body, Door::messages);
}

api::ApiResult<api::TokenizeRequest> parse_count_tokens_request(std::string_view body) {
  auto parsed = parse(body, Door::count_tokens);
  if (!parsed) return parsed.error();
  api::TokenizeRequest request;
  request.model = std::move(parsed->model);
  request.is_chat = true;
  request.messages = std::move(parsed->messages);
  request.tools = std::move(parsed->tools);
  request.chat_template_kwargs = std::move(parsed->chat_template_kwargs);
  request.add_generation_prompt = parsed->add_generation_prompt;
  request.continue_final_message = parsed->continue_final_message;
  // start_chat tokenizes the rendered prompt without adding special tokens: the template wrote
  // them.
  request.add_special_tokens = false;
  return request;
}

}  // namespace tern::service::anthropic
