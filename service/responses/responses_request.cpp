#include "service/responses/responses_request.h"

#include <fmt/format.h>

#include "service/api/json_writer.h"
#include "service/api/reasoning_effort.h"
#include "service/api/structured_output_fields.h"
#include "service/api/tool_values.h"
#include "service/responses/responses_input.h"

namespace tern::service::responses {
namespace {

using api::invalid_request;
using api::not_implemented;

api::json::Check read_optional_string(const api::json::element& value, std::string_view param,
                                      std::optional<std::string>& out) {
  std::string text;
  if (api::json::Check error = api::json::read_string(value, param, text)) return error;
  out = std::move(text);
  return std::nullopt;
}

// Function tools, flat ({type, name, description, parameters, strict}), become chat-shaped
// tools for the template. Codex also sends tools that OpenAI runs or that need their own
// output format (web_search, local_shell, custom, ...): tern can run none of them and the model
// is not told of them, so they are dropped rather than refused.
api::json::Check read_tools(const api::json::element& value, ResponsesRequest& request) {
  api::json::array tools;
  if (value.get_array().get(tools) != simdjson::SUCCESS) {
    return api::json::wrong_type("tools", "array", value);
  }
  engine::chat::ValueList chat_tools;
  std::string echoed;
  api::JsonWriter echo(echoed);
  echo.begin_array();
  std::size_t index = 0;
  for (api::json::element tool : tools) {
    const std::string param = fmt::format("tools[{}]", index++);
    api::json::object fields;
    if (tool.get_object().get(fields) != simdjson::SUCCESS) {
      return api::json::wrong_type(param, "object", tool);
    }
    std::string_view type;
    if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
      return api::invalid_request(param + ".type", "Each tool needs a string 'type'",
                                  "missing_required_parameter");
    }
    if (type != "function") continue;
    std::string_view name;
    if (fields["name"].get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      return api::invalid_request(param + ".name",
                                  "Each function tool needs a non-empty string 'name'",
                                  "missing_required_parameter");
    }
    api::json::element description;
    std::string_view description_text;
    engine::chat::Value described;
    if (fields["description"].get(description) == simdjson::SUCCESS && !description.is_null()) {
      if (description.get_string().get(description_text) != simdjson::SUCCESS) {
        return api::json::wrong_type(param + ".description", "string", description);
      }
      described = engine::chat::Value::string(std::string(description_text));
    }
    api::json::element parameters;
    engine::chat::Value schema;
    if (fields["parameters"].get(parameters) == simdjson::SUCCESS && !parameters.is_null()) {
      if (!parameters.is_object()) {
        return api::json::wrong_type(param + ".parameters", "object", parameters);
      }
      auto read = api::value_of(parameters, param + ".parameters");
      if (!read) return read.error();
      schema = std::move(*read);
    }
    chat_tools.push_back(
        api::function_tool(std::string(name), std::move(described), std::move(schema)));
    echo.raw(api::json::to_json(tool));
  }
  echo.end_array();
  if (!chat_tools.empty()) request.tools = engine::chat::Value::list(std::move(chat_tools));
  request.settings.tools_json = std::move(echoed);
  return std::nullopt;
}

api::json::Check read_tool_choice(const api::json::element& value, ResponsesRequest& request) {
  std::string_view mode;
  if (value.get_string().get(mode) != simdjson::SUCCESS) {
    if (!value.is_object()) return api::json::wrong_type("tool_choice", "string or object", value);
    std::string_view type;
    std::string_view name;
    if (value["type"].get_string().get(type) == simdjson::SUCCESS && type == "function" &&
        value["name"].get_string().get(name) == simdjson::SUCCESS && !name.empty()) {
      request.tool_choice = api::ToolChoice::required;
      request.required_tool.assign(name);
      request.settings.tool_choice_json = api::json::to_json(value);
      return std::nullopt;
    }
    // allowed_tools or a hosted tool: each limits the calls in ways tern does not.
    return api::not_implemented("tool_choice",
                                "'tool_choice' as an object is supported only as {\"type\": "
                                "\"function\", \"name\": ...}; use 'auto', 'required' or 'none'");
  }
  if (mode != "auto" && mode != "none" && mode != "required") {
    return api::invalid_request(
        "tool_choice",
        fmt::format("Invalid value for 'tool_choice': '{}' is not none, auto or required", mode),
        "invalid_value");
  }
  request.settings.tool_choice_json = json_string(mode);
  request.tool_choice = mode == "none"       ? api::ToolChoice::none
                        : mode == "required" ? api::ToolChoice::required
                                             : api::ToolChoice::automatic;
  return std::nullopt;
}

// reasoning.effort as the chat door's reasoning_effort maps it: a budget of reasoning tokens.
// reasoning.summary is accepted: tern returns the reasoning itself, never a summary.
api::json::Check read_reasoning(const api::json::element& value, ResponsesRequest& request) {
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type("reasoning", "object", value);
  }
  api::json::element effort_value;
  if (fields["effort"].get(effort_value) != simdjson::SUCCESS || effort_value.is_null()) {
    return std::nullopt;
  }
  if (api::json::Check error = api::read_reasoning_effort(effort_value, "reasoning.effort",
                                                          request.reasoning_budget_tokens)) {
    return error;
  }
  std::string effort(std::string_view(effort_value.get_string().value_unsafe()));
  request.settings.reasoning_effort = std::move(effort);
  return std::nullopt;
}

// text.format asks for structured outputs; text.verbosity only tunes length.
api::json::Check read_text(const api::json::element& value, engine::grammar::GrammarSpec& spec,
                           ResponseSettings& settings) {
  api::json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return api::json::wrong_type("text", "object", value);
  }
  api::json::element format;
  if (fields["format"].get(format) != simdjson::SUCCESS || format.is_null()) return std::nullopt;
  if (api::json::Check error = api::read_text_format(format, "text.format", spec)) return error;
  settings.text_format_json = api::json::to_json(format);
  return std::nullopt;
}

// Characters, not bytes, as OpenAI counts them: UTF-8 bytes that do not continue a character.
std::size_t character_count(std::string_view text) {
  std::size_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

// OpenAI's bounds: at most 16 pairs, keys up to 64 characters, string values up to 512. The
// object is stored with the response and returned by every GET, so it must stay small.
api::json::Check read_metadata(const api::json::element& value, ResponseSettings& settings) {
  constexpr std::size_t kMaxPairs = 16;
  constexpr std::size_t kMaxKey = 64;
  constexpr std::size_t kMaxValue = 512;
  api::json::object pairs;
  if (value.get_object().get(pairs) != simdjson::SUCCESS) {
    return api::json::wrong_type("metadata", "object", value);
  }
  if (pairs.size() > kMaxPairs) {
    return api::invalid_request(
        "metadata",
        fmt::format("Invalid 'metadata': too many properties. Expected an object "
                    "with at most {} properties, but got {}",
                    kMaxPairs, pairs.size()),
        "invalid_value");
  }
  for (auto [key, pair_value] : pairs) {
    if (character_count(key) > kMaxKey) {
      return api::invalid_request(
          "metadata",
          fmt::format("Invalid 'metadata': a key of {} characters; keys have at "
                      "most {} characters",
                      character_count(key), kMaxKey),
          "invalid_value");
    }
    const std::string param = fmt::format("metadata.{}", key);
    std::string_view text;
    if (pair_value.get_string().get(text) != simdjson::SUCCESS) {
      return api::json::wrong_type(param, "string", pair_value);
    }
    if (character_count(text) > kMaxValue) {
      return api::invalid_request(
          param,
          fmt::format("Invalid '{}': string too long. Expected a string with "
                      "maximum length {}, but got a string with length {}",
                      param, kMaxValue, character_count(text)),
          "string_above_max_length");
    }
  }
  settings.metadata_json = api::json::to_json(value);
  return std::nullopt;
}

// Fields that would change how or what tern answers, and that it cannot do yet.
api::json::Check refuse(std::string_view key, const api::json::element& value) {
  if (key == "background") {
    bool background = false;
    if (api::json::Check error = api::json::read_bool(value, key, background)) return error;
    if (!background) return std::nullopt;
    return api::not_implemented("background", "'background' responses are not supported yet");
  }
  if (key == "conversation") {
    return api::not_implemented("conversation",
                                "'conversation' is not supported: tern keeps no conversations; use "
                                "'previous_response_id' or send the history in 'input'");
  }
  if (key == "prompt") {
    return api::not_implemented("prompt", "'prompt' (stored prompt templates) is not supported");
  }
  return std::nullopt;
}

}  // namespace

api::ApiResult<ResponsesRequest> parse_responses_request(std::string_view body) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  ResponsesRequest request;
  std::vector<api::ChatMessage> input;
  bool has_input = false;
  for (auto [key, value] : *root) {
    api::json::Check error;
    ResponseSettings& settings = request.settings;
    if (value.is_null()) continue;  // null means "not given", as for the other doors
    if (key == "model") {
      error = api::json::read_string(value, key, request.model);
    } else if (key == "input") {
      error = read_input(value, input);
      has_input = true;
    } else if (key == "instructions") {
      error = read_optional_string(value, key, settings.instructions);
    } else if (key == "max_output_tokens") {
      int tokens = 0;
      error = api::json::read_int(value, key, 1, api::kMaxTokensLimit, tokens);
      request.sampling.max_tokens = settings.max_output_tokens = tokens;
    } else if (key == "temperature") {
      double temperature = 0;
      error = api::json::read_number(value, key, 0.0, 2.0, temperature);
      request.sampling.temperature = settings.temperature = temperature;
    } else if (key == "top_p") {
      double top_p = 0;
      error = api::json::read_number(value, key, 0.0, 1.0, top_p);
      if (!error && top_p <= 0.0) {
        error = api::invalid_request("top_p", "Invalid value for 'top_p': must be in (0, 1]",
                                     "invalid_value");
      }
      request.sampling.top_p = settings.top_p = top_p;
    } else if (key == "stream") {
      error = api::json::read_bool(value, key, request.stream);
    } else if (key == "tools") {
      error = read_tools(value, request);
    } else if (key == "tool_choice") {
      error = read_tool_choice(value, request);
    } else if (key == "reasoning") {
      error = read_reasoning(value, request);
    } else if (key == "text") {
      error = read_text(value, request.structured_output, request.settings);
    } else if (key == "store") {
      error = api::json::read_bool(value, key, settings.store);
    } else if (key == "previous_response_id") {
      error = read_optional_string(value, key, settings.previous_response_id);
    } else if (key == "metadata") {
      error = read_metadata(value, settings);
    } else if (key == "parallel_tool_calls") {
      error = api::json::read_bool(value, key, settings.parallel_tool_calls);
      request.parallel_tool_calls = settings.parallel_tool_calls;
    } else if (key == "user") {
      error = read_optional_string(value, key, settings.user);
      if (!error) request.user = *settings.user;
    } else if (key == "include") {
      if (!value.is_array()) error = api::json::wrong_type(key, "array of strings", value);
    } else {
      error = refuse(key, value);
    }
    // Anything else is ignored: prompt_cache_key, service_tier, truncation, safety_identifier,
    // max_tool_calls, stream_options, top_logprobs and fields newer than this parser.
    if (error) return *std::move(error);
  }
  if (!has_input) {
    return api::invalid_request("input", "Missing required parameter: 'input'",
                                "missing_required_parameter");
  }
  if (input.empty() && !request.settings.previous_response_id) {
    return api::invalid_request("input", "'input' must contain at least one item", "invalid_value");
  }
  if (request.settings.instructions) {
    api::ChatMessage system;
    system.role = api::ChatRole::system;
    system.content = *request.settings.instructions;
    request.messages.push_back(std::move(system));
  }
  request.messages.insert(request.messages.end(), std::make_move_iterator(input.begin()),
                          std::make_move_iterator(input.end()));
  return request;
}

}  // namespace tern::service::responses
