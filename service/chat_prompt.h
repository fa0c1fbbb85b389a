#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/model_chat_template.h"
#include "engine/chat/value.h"
#include "service/api/api_error.h"
#include "service/api/chat_request.h"

namespace tern::service {

// What a chat template is rendered from, as the OpenAI request carries it.
struct ChatPromptInput {
  const std::vector<api::ChatMessage>* messages = nullptr;
  engine::chat::Value tools;                 // a list in OpenAI's shape; undefined when absent
  engine::chat::Value chat_template_kwargs;  // a dict; undefined when absent
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};

// Renders the conversation as transformers' apply_chat_template does: messages (tool calls as the
// door read them, arguments parsed, and missing content as "", as vLLM passes them), tools,
// add_generation_prompt and the kwargs as top-level variables. A template that raises is the
// client's fault: 400 with its message. Tools on a model whose template never reads `tools` are
// refused (400, param `tools`) rather than dropped from the prompt.
api::ApiResult<std::string> render_chat_prompt(const engine::ModelChatTemplate& chat_template,
                                               const ChatPromptInput& input);

}  // namespace tern::service
