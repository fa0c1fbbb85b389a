#include <algorithm>
#include <array>
#include <vector>

#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

bool known_tool_parser(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kNames{"hermes", "llama3_json", "mistral",
                                                          "deepseek_v3", "none"};
  return std::ranges::find(kNames, name) != kNames.end();
}

bool known_reasoning_parser(std::string_view name) {
  static constexpr std::array<std::string_view, 3> kNames{"qwen3", "deepseek_r1", "none"};
  return std::ranges::find(kNames, name) != kNames.end();
}

std::vector<std::string_view> parser_markers(std::string_view name) {
  if (name == "hermes") return {"<tool_call>", "</tool_call>"};
  if (name == "llama3_json") return {"<|python_tag|>"};
  if (name == "mistral") return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
  if (name == "deepseek_v3") {
    return {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"};
  }
  if (name == "qwen3" || name == "deepseek_r1") return {"<think>", "</think>"};
  return {};
}

}  // namespace tern::engine::chat
