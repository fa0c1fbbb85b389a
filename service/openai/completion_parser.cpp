#include "service/openai/completion_parser.h"

#include <fmt/format.h>

#include "service/api/json_reader.h"
#include "service/openai/generation_fields.h"
#include "service/openai/sampling_fields.h"
#include "service/openai/unimplemented_fields.h"

namespace tern::service::openai {
namespace {

api::json::Check empty_prompt(std::string param) {
  return api::invalid_request(std::move(param), "The prompt must not be empty", "invalid_value");
}

api::json::Check read_prompt(const api::json::element& value,
                             std::vector<api::CompletionPrompt>& prompts) {
  prompts.clear();
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    prompts.push_back({std::string(text), {}, false});
    return std::nullopt;
  }
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("prompt", "string, array of strings or array of token ids", value);
  }
  if (items.size() == 0) return empty_prompt("prompt");
  const api::json::element first = items.at(0).value_unsafe();
  if (first.is_int64() || first.is_uint64() || first.is_double()) {
    api::CompletionPrompt& prompt = prompts.emplace_back();
    prompt.is_token_ids = true;
    return api::json::read_token_ids(value, "prompt", prompt.token_ids);
  }
  const bool strings = first.is_string();
  if (!strings && !first.is_array()) {
    return api::json::wrong_type("prompt[0]", "string, token id or array of token ids", first);
  }
  std::size_t index = 0;
  for (api::json::element item : items) {
    const std::string param = fmt::format("prompt[{}]", index++);
    api::CompletionPrompt& prompt = prompts.emplace_back();
    if (strings) {
      if (api::json::Check error = api::json::read_string(item, param, prompt.text)) return error;
    } else {
      prompt.is_token_ids = true;
      if (api::json::Check error = api::json::read_token_ids(item, param, prompt.token_ids))
        return error;
      if (prompt.token_ids.empty()) return empty_prompt(param);
    }
  }
  return std::nullopt;
}

}  // namespace

api::ApiResult<api::CompletionRequest> parse_completion_request(std::string_view body) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  api::CompletionRequest request;
  bool has_prompt = false;
  for (auto [key, value] : *root) {
    api::json::Check error;
    if (key == "prompt") {
      error = read_prompt(value, request.prompts);
      has_prompt = true;
    } else if (read_generation_field(key, value, request, error)) {
      // read above
    } else if (value.is_null()) {
      continue;
    } else if (key == "echo") {
      error = api::json::read_bool(value, key, request.echo);
    } else if (key == "logprobs") {
      int count = 0;
      error = api::json::read_int(value, key, 0, api::kMaxTopLogprobs, count);
      request.logprobs = count;
    } else if (key == "add_special_tokens") {
      error = api::json::read_bool(value, key, request.add_special_tokens);
    } else if (key == "suffix") {
      std::string suffix;
      error = api::json::read_string(value, key, suffix);
      if (!error && !suffix.empty()) {
        error = api::not_implemented("suffix", "'suffix' is not supported yet");
      }
    } else {
      error = refuse_unimplemented_field(key, value);
    }
    if (error) return *std::move(error);
  }
  if (!has_prompt) {
    return api::invalid_request("prompt", "Missing required parameter: 'prompt'",
                                "missing_required_parameter");
  }
  if (api::json::Check error = validate_sampling(request.sampling)) return *std::move(error);
  return request;
}

}  // namespace tern::service::openai
