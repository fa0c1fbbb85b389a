#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "service/api/chat_request.h"

namespace tern::service::api {

// POST /tokenize as in vLLM: either `prompt` (text) or `messages` (rendered with the chat
// template first).
struct TokenizeRequest {
  std::string model;
  bool is_chat = false;
  std::string prompt;
  std::vector<ChatMessage> messages;
  engine::chat::Value tools;                 // as ChatRequest::tools
  engine::chat::Value chat_template_kwargs;  // as ChatRequest::chat_template_kwargs
  bool add_generation_prompt = true;
  bool continue_final_message = false;  // the last assistant message is continued, not closed
  // vLLM's defaults: true for a prompt, false for messages (the template adds them).
  bool add_special_tokens = true;
  bool return_token_strs = false;
};

// POST /detokenize as in vLLM.
struct DetokenizeRequest {
  std::string model;
  std::vector<std::int32_t> tokens;
};

}  // namespace tern::service::api
