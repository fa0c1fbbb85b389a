#include "service/openai/tokenize_parser.h"

#include "service/api/json_reader.h"
#include "service/openai/chat_messages_field.h"

namespace tern::service::openai {

api::ApiResult<api::TokenizeRequest> parse_tokenize_request(std::string_view body) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  api::TokenizeRequest request;
  bool has_prompt = false;
  std::optional<bool> add_special_tokens;
  for (auto [key, value] : *root) {
    api::json::Check error;
    if (value.is_null()) continue;
    if (key == "model") {
      error = api::json::read_string(value, key, request.model);
    } else if (key == "prompt") {
      error = api::json::read_string(value, key, request.prompt);
      has_prompt = true;
    } else if (key == "messages") {
      error = read_chat_messages(value, request.messages);
      request.is_chat = true;
    } else if (key == "tools") {
      error = read_tools(value, request.tools);
    } else if (key == "chat_template_kwargs") {
      error = read_template_kwargs(value, request.chat_template_kwargs);
    } else if (key == "add_generation_prompt") {
      error = api::json::read_bool(value, key, request.add_generation_prompt);
    } else if (key == "continue_final_message") {
      error = api::json::read_bool(value, key, request.continue_final_message);
    } else if (key == "add_special_tokens") {
      bool flag = true;
      error = api::json::read_bool(value, key, flag);
      add_special_tokens = flag;
    } else if (key == "return_token_strs") {
      error = api::json::read_bool(value, key, request.return_token_strs);
    }
    if (error) return *std::move(error);
  }
  if (has_prompt == request.is_chat) {
    return api::invalid_request(has_prompt ? "messages" : "prompt",
                                "Give exactly one of 'prompt' and 'messages'",
                                has_prompt ? "invalid_value" : "missing_required_parameter");
  }
  request.add_special_tokens = add_special_tokens.value_or(!request.is_chat);
  return request;
}

api::ApiResult<api::DetokenizeRequest> parse_detokenize_request(std::string_view body) {
  auto root = api::json::parse_object_body(body);
  if (!root) return root.error();
  api::DetokenizeRequest request;
  bool has_tokens = false;
  for (auto [key, value] : *root) {
    api::json::Check error;
    if (key == "model" && !value.is_null()) {
      error = api::json::read_string(value, key, request.model);
    } else if (key == "tokens") {
      error = api::json::read_token_ids(value, key, request.tokens);
      has_tokens = true;
    }
    if (error) return *std::move(error);
  }
  if (!has_tokens) {
    return api::invalid_request("tokens", "Missing required parameter: 'tokens'",
                                "missing_required_parameter");
  }
  return request;
}

}  // namespace tern::service::openai
