#include "tests/support/scripted_replies.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "engine/chat/value_json.h"

namespace tern::testing {
namespace {

using service::api::ChatMessage;
using service::api::ChatRole;

std::string lowercase(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string call(std::string_view name, std::string_view arguments) {
  std::string text = "<tool_call>\n{\"name\": \"";
  text += name;
  text += "\", \"arguments\": ";
  text += arguments;
  text += "}\n</tool_call>";
  return text;
}

std::string think(std::string_view reasoning) {
  return "<think>\n" + std::string(reasoning) + "\n</think>\n\n";
}

std::string long_reply() {
  std::string text;
  for (int i = 1; i <= 100; ++i) text += "Sentence number " + std::to_string(i) + " goes on. ";
  return text;
}

}  // namespace

ScriptedReply scripted_reply(const std::vector<ChatMessage>& messages) {
  if (!messages.empty() && messages.back().role == ChatRole::tool) {
    return {think("The tool answered; I can reply now.") +
            "The weather tool says: " + messages.back().content.value_or("") + "."};
  }
  std::string last;
  for (const ChatMessage& message : messages) {
    if (message.role == ChatRole::user) last = lowercase(message.content.value_or(""));
  }
  if (last.find("two calls") != std::string::npos) {
    return {think("Two cities, so two calls.") + call("get_weather", R"({"city": "Paris"})") +
            "\n" + call("get_weather", R"({"city": "Tōkyō", "unit": "celsius"})")};
  }
  if (last.find("unknown tool") != std::string::npos) {
    return {call("launch_rockets", R"({"count": 3})")};
  }
  if (last.find("check first") != std::string::npos) {
    return {"Let me check that for you.\n" + call("get_weather", R"({"city": "Paris"})") +
            "\nI asked the weather tool."};
  }
  if (last.find("weather") != std::string::npos) {
    return {think("The user asks about weather.") + call("get_weather", R"({"city": "Paris"})")};
  }
  if (last.find("broken") != std::string::npos) {
    return {
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"\n"
        "</tool_call>"};
  }
  if (last.find("thinking") != std::string::npos) {
    return {think("Let me think… 6 × 7 = 42 ✓.") + "The answer is 42 — naïve café ☕."};
  }
  if (last.find("long") != std::string::npos) return {long_reply()};
  if (last.find("fail midway") != std::string::npos) return {kPlainReply, 4};
  return {kPlainReply};
}

namespace {

std::string json_text(const engine::chat::Value& value) {
  auto json = engine::chat::to_json(value);
  return json ? std::move(*json) : std::string();
}

}  // namespace

std::string conversation_text(const std::vector<ChatMessage>& messages,
                              const engine::chat::Value& tools) {
  std::string text;
  if (!tools.is_undefined()) {
    text += "<|im_start|>system\n# Tools\n" + json_text(tools) + "<|im_end|>\n";
  }
  for (const ChatMessage& message : messages) {
    text += "<|im_start|>";
    text += service::api::role_name(message.role);
    text += "\n";
    if (!message.reasoning_content.empty()) text += think(message.reasoning_content);
    if (message.role == ChatRole::tool) {
      text += "<tool_response>\n" + message.content.value_or("") + "\n</tool_response>";
    } else {
      text += message.content.value_or("");
    }
    if (!message.tool_calls.is_undefined()) {
      text += "<tool_call>\n" + json_text(message.tool_calls) + "\n</tool_call>";
    }
    text += "<|im_end|>\n";
  }
  return text + "<|im_start|>assistant\n";
}

}  // namespace tern::testing
