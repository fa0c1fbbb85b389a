#pragma once

// What the scripted model "says" to a conversation, as Qwen3 would write it (reasoning in
// <think>, Hermes-style <tool_call> blocks), chosen by a keyword of the last user message. The
// text goes through the real tokenizer and output parsers, so every parser path is exercised.
#include <string>
#include <vector>

#include "service/api/chat_request.h"

namespace tern::testing {

struct ScriptedReply {
  std::string text;
  int fail_after_tokens = -1;  // >= 0: the generation fails (an error event) after this many
};

// After a tool message: a final answer quoting the tool's result. Otherwise by the last user
// message, case-insensitively, the first that matches:
//   "two calls"    reasoning, then get_weather for Paris and for Tōkyō in one turn
//   "unknown tool" a well-formed call to launch_rockets, a function the request did not offer
//   "check first"  text, get_weather({"city": "Paris"}), then more text
//   "weather"      reasoning, then get_weather({"city": "Paris"})
//   "broken"       a <tool_call> block whose JSON never closes
//   "thinking"     reasoning, then an answer with multi-byte characters
//   "long"         about 400 tokens of text, to run into max_tokens
//   "fail midway"  kPlainReply, failing after 4 tokens
//   anything else  kPlainReply
ScriptedReply scripted_reply(const std::vector<service::api::ChatMessage>& messages);

inline constexpr const char* kPlainReply =
    "Hello from tern: a plain answer with ünïcödé and an emoji 🌍. That is all.";

// A conversation as one text, for counting its tokens: ChatML turns with the tools, reasoning,
// calls and tool results, ending in the assistant's generation prompt.
std::string conversation_text(const std::vector<service::api::ChatMessage>& messages,
                              const engine::chat::Value& tools);

}  // namespace tern::testing
