#include "service/chat_prompt.h"

#include <fmt/format.h>

namespace tern::service {
namespace {

using engine::chat::Value;
using engine::chat::ValueDict;
using engine::chat::ValueList;

Value message_value(const api::ChatMessage& message) {
  ValueDict entries;
  entries.set("role", Value::string(std::string(api::role_name(message.role))));
  // A message without text (an assistant turn that only calls tools) is "" to the template, as
  // vLLM and llama.cpp's server give it: templates read content as a string ('</think>' in
  // content, content | trim) and fail on none.
  entries.set("content", Value::string(message.content.value_or(std::string())));
  if (!message.name.empty()) entries.set("name", Value::string(message.name));
  if (!message.tool_calls.is_undefined()) entries.set("tool_calls", message.tool_calls);
  if (!message.tool_call_id.empty()) {
    entries.set("tool_call_id", Value::string(message.tool_call_id));
  }
  if (!message.reasoning_content.empty()) {
    entries.set("reasoning_content", Value::string(message.reasoning_content));
  }
  return Value::dict(std::move(entries));
}

// transformers' continue_final_message: cut the rendering right after the last message's text,
// so the model continues it instead of starting a new turn.
api::ApiResult<std::string> cut_after_final_message(std::string rendered,
                                                    const api::ChatMessage& last) {
  const std::string content = last.content.value_or("");
  const auto first = content.find_first_not_of(" \t\r\n");
  const auto end = content.find_last_not_of(" \t\r\n");
  const std::string stripped =
      first == std::string::npos ? std::string() : content.substr(first, end - first + 1);
  const std::size_t at = stripped.empty() ? std::string::npos : rendered.rfind(stripped);
  if (at == std::string::npos) {
    return api::invalid_request(
        "continue_final_message",
        "continue_final_message is set but the final message does not appear in the rendered "
        "chat template");
  }
  const std::string left_stripped = first == std::string::npos ? "" : content.substr(first);
  const bool spacing_kept =
      rendered.compare(at, left_stripped.size(), left_stripped) == 0 && left_stripped == content;
  rendered.resize(at + (spacing_kept ? left_stripped.size() : stripped.size()));
  return rendered;
}

}  // namespace

api::ApiResult<std::string> render_chat_prompt(const engine::ModelChatTemplate& chat_template,
                                               const ChatPromptInput& input) {
  const std::vector<api::ChatMessage>& messages = *input.messages;
  if (input.add_generation_prompt && input.continue_final_message) {
    return api::invalid_request("continue_final_message",
                                "continue_final_message and add_generation_prompt cannot both "
                                "be true");
  }
  if (input.continue_final_message &&
      (messages.empty() || messages.back().role != api::ChatRole::assistant)) {
    return api::invalid_request("continue_final_message",
                                "continue_final_message needs a final assistant message");
  }
  ValueDict context;
  if (!input.chat_template_kwargs.is_undefined()) {
    if (!input.chat_template_kwargs.is_dict()) {
      return api::invalid_request("chat_template_kwargs", "chat_template_kwargs must be an object");
    }
    for (const auto& [key, value] : input.chat_template_kwargs.as_dict()) context.set(key, value);
  }
  ValueList list;
  list.reserve(messages.size());
  for (const api::ChatMessage& message : messages) list.push_back(message_value(message));
  context.set("messages", Value::list(std::move(list)));
  if (!input.tools.is_undefined()) {
    if (!input.tools.is_list()) return api::invalid_request("tools", "tools must be an array");
    if (!input.tools.as_list().empty()) {
      if (!chat_template.renders_tools()) {
        return api::invalid_request(
            "tools",
            "This model's chat template never reads `tools`, so the model would not see them; "
            "send the request without `tools`, or serve the model with a chat_template that "
            "renders them");
      }
      context.set("tools", input.tools);
    }
  }
  context.set("add_generation_prompt", Value::boolean(input.add_generation_prompt));
  auto rendered = chat_template.render(Value::dict(std::move(context)));
  if (!rendered) {
    return api::invalid_request(
        "messages", fmt::format("The chat template failed: {}", rendered.error().message));
  }
  if (!input.continue_final_message) return std::move(*rendered);
  return cut_after_final_message(std::move(*rendered), messages.back());
}

}  // namespace tern::service
