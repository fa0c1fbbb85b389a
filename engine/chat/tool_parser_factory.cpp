// Parsers by vLLM's names, and the names a chat template implies.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/deepseek_v3_tool_parser.h"
#include "engine/chat/hermes_tool_parser.h"
#include "engine/chat/llama3_json_tool_parser.h"
#include "engine/chat/mistral_tool_parser.h"
#include "engine/chat/output_parser.h"
#include "engine/chat/think_reasoning_parser.h"

namespace tern::engine::chat {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name,
                                                       bool starts_in_reasoning) {
  // The two differ in vLLM only in how they guess whether the prompt opened reasoning; here the
  // caller says so, which leaves one parser.
  if (name == "qwen3" || name == "deepseek_r1") {
    return std::make_unique<ThinkReasoningParser>(starts_in_reasoning);
  }
  return nullptr;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(std::string_view name,
                                                      std::vector<std::string> tool_names) {
  if (name == "hermes") return std::make_unique<HermesToolParser>(std::move(tool_names));
  if (name == "llama3_json") return std::make_unique<Llama3JsonToolParser>(std::move(tool_names));
  if (name == "mistral") return std::make_unique<MistralToolParser>(std::move(tool_names));
  if (name == "deepseek_v3" || name == "deepseek_v31") {
    return std::make_unique<DeepseekV3ToolParser>(std::move(tool_names));
  }
  return nullptr;
}

std::string tool_call_parser_for_template(std::string_view template_source) {
  if (contains(template_source, "tool▁calls▁begin")) return "deepseek_v3";
  if (contains(template_source, "[TOOL_CALLS]")) return "mistral";
  if (contains(template_source, "<tool_call>")) return "hermes";
  // Llama 3.1+ templates name <|python_tag|> for built-in tools and ask for JSON calls with
  // "parameters"; the header markers keep other templates that say "parameters" out.
  if (contains(template_source, "<|python_tag|>") ||
      (contains(template_source, "\"parameters\"") &&
       contains(template_source, "<|start_header_id|>"))) {
    return "llama3_json";
  }
  return {};
}

std::string reasoning_parser_for_template(std::string_view template_source) {
  if (!contains(template_source, "<think>") && !contains(template_source, "</think>")) return {};
  return contains(template_source, "｜Assistant｜") ? "deepseek_r1" : "qwen3";
}

}  // namespace tern::engine::chat
