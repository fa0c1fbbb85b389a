#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/value.h"
#include "service/api/generation_request.h"

namespace tern::service::api {

enum class ChatRole { system, developer, user, assistant, tool };
std::string_view role_name(ChatRole role);

enum class ToolChoice { automatic, none, required };

struct ChatMessage {
  ChatRole role = ChatRole::user;
  // The text; an array of text parts is joined with "\n". Unset when the message had no
  // content or null (an assistant turn that only calls tools).
  std::optional<std::string> content;
  std::string name;
  // The assistant's tool calls in OpenAI's shape, each call's arguments an object where they were
  // JSON text of one (api/tool_values.h); undefined when absent.
  engine::chat::Value tool_calls;
  std::string tool_call_id;  // a tool message's answer to that call
  std::string reasoning_content;
};

// One chat generation as every door asks for it: OpenAI's chat completions (with vLLM's
// extensions) parse into it directly; the Anthropic and Responses doors translate into it.
struct ChatRequest : GenerationRequest {
  std::vector<ChatMessage> messages;
  bool logprobs = false;
  int top_logprobs = 0;
  // The function tools in OpenAI's shape, which the chat template reads as they are (each door
  // translates its own into it); undefined when absent.
  engine::chat::Value tools;
  // "required" (Anthropic's "any") or naming one function (`required_tool`): the answer must be a
  // call of the tools, constrained to their schemas. "none": tool calls are not parsed.
  ToolChoice tool_choice = ToolChoice::automatic;
  std::string required_tool;
  // False: at most one tool call per turn; later calls in the output are dropped, as vLLM does.
  bool parallel_tool_calls = true;
  // Extra top-level variables of the chat template (a dict); undefined when absent.
  engine::chat::Value chat_template_kwargs;
  // The most tokens a reasoning model may think for before tern closes its reasoning:
  // reasoning_effort here, Anthropic's thinking.budget_tokens. Unset: no cap.
  std::optional<int> reasoning_budget_tokens;
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};

}  // namespace tern::service::api
