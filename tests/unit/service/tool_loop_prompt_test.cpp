// The second turn of a tool loop, as each door's clients send it (OpenAI: content null and
// arguments as a JSON string; Responses: function_call then function_call_output items;
// Anthropic: an assistant turn of tool_use blocks only), rendered with the real Qwen3 and
// Llama 3 templates, must equal the reference rendering of case tools_and_call in
// ../shared/reference/{qwen3,llama3}.chat_template.jsonl byte for byte (an assistant turn with
// content "" and its arguments as an object, as vLLM hands them to the template).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/chat/model_chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "service/api/chat_request.h"
#include "service/chat_prompt.h"
#include "tests/support/chat_doors.h"
#include "tests/support/shared_data.h"

namespace tern::service {
namespace {

std::string reference_rendering(const std::filesystem::path& path, std::string_view name) {
  std::ifstream lines(path);
  simdjson::dom::parser parser;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    simdjson::padded_string padded(line);
    simdjson::dom::element record;
    if (parser.parse(padded).get(record) != simdjson::SUCCESS) continue;
    std::string_view case_name;
    std::string_view rendered;
    if (record["case"].get_string().get(case_name) != simdjson::SUCCESS || case_name != name) {
      continue;
    }
    if (record["rendered"].get_string().get(rendered) == simdjson::SUCCESS) {
      return std::string(rendered);
    }
  }
  ADD_FAILURE() << "no case " << name << " in " << path;
  return {};
}

// The template as the model serves it: its tokenizer's, with its BOS and EOS.
std::unique_ptr<engine::ModelChatTemplate> model_template(const std::filesystem::path& dir) {
  auto tokenizer = engine::Tokenizer::load(dir.string());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  if (!tokenizer.ok()) return nullptr;
  auto loaded = engine::ModelChatTemplate::load(**tokenizer);
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  if (!loaded.ok()) return nullptr;
  return std::make_unique<engine::ModelChatTemplate>(std::move(*loaded));
}

api::ApiResult<std::string> render(const engine::ModelChatTemplate& chat_template,
                                   const api::ChatRequest& request) {
  return render_chat_prompt(
      chat_template,
      ChatPromptInput{&request.messages, request.tools, request.chat_template_kwargs,
                      request.add_generation_prompt, request.continue_final_message});
}

// Llama 3's template never reads `tools`, and tern refuses tools the model would not see
// (ChatPromptTools.RefusedWhenTheTemplateCannotRenderThem), so its bodies leave them out: the
// reference rendering of tools_and_call does not show them either.
struct Door {
  std::string_view name;
  std::string_view tools;  // the door's tools field, without the key
  std::string_view conversation;
  api::ApiResult<api::ChatRequest> (*parse)(std::string_view body);
};

using tern::testing::parse_anthropic;
using tern::testing::parse_chat;
using tern::testing::parse_responses;

constexpr std::string_view kParameters =
    R"({"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]})";

std::string body_of(const Door& door, bool with_tools) {
  std::string tools;
  if (with_tools) {
    tools = std::string(door.tools);
    const std::size_t at = tools.find("PARAMETERS");
    tools.replace(at, 10, kParameters);
  }
  return std::string(R"({"model": "m", "max_tokens": 16)") + tools + "," +
         std::string(door.conversation) + "}";
}

const Door kDoors[] = {
    {"chat",
     R"(, "tools": [{"type": "function", "function": {"name": "get_weather",
        "description": "Get the weather for a city", "parameters": PARAMETERS}}])",
     R"("messages": [{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
          "type": "function", "function": {"name": "get_weather",
          "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}])",
     &parse_chat},
    {"responses",
     R"(, "tools": [{"type": "function", "name": "get_weather",
        "description": "Get the weather for a city", "parameters": PARAMETERS}])",
     R"("input": [{"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp\": 21}"}])",
     &parse_responses},
    {"anthropic",
     R"(, "tools": [{"name": "get_weather", "description": "Get the weather for a city",
        "input_schema": PARAMETERS}])",
     R"("messages": [{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
          "name": "get_weather", "input": {"city": "Paris", "unit": "c"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
          "content": "{\"temp\": 21}"}]}])",
     &parse_anthropic},
};

void expect_reference(std::string_view model, bool with_tools) {
  const std::filesystem::path tokenizer_dir =
      tern::testing::shared_path("tokenizers/" + std::string(model));
  const std::filesystem::path reference =
      tern::testing::shared_path("reference/" + std::string(model) + ".chat_template.jsonl");
  if (!std::filesystem::exists(tokenizer_dir / "tokenizer_config.json") ||
      !std::filesystem::exists(reference)) {
    GTEST_SKIP() << "needs " << tokenizer_dir.string() << " and " << reference.string()
                 << " (../shared is absent or incomplete)";
  }
  const auto chat_template = model_template(tokenizer_dir);
  ASSERT_NE(chat_template, nullptr);
  ASSERT_FALSE(chat_template->is_fallback());
  const std::string expected = reference_rendering(reference, "tools_and_call");
  for (const Door& door : kDoors) {
    SCOPED_TRACE(door.name);
    const std::string body = body_of(door, with_tools);
    auto request = door.parse(body);
    ASSERT_TRUE(request.ok()) << request.error().param << ": " << request.error().message;
    auto prompt = render(*chat_template, *request);
    ASSERT_TRUE(prompt.ok()) << prompt.error().param << ": " << prompt.error().message;
    EXPECT_EQ(*prompt, expected);
  }
}

TEST(ToolLoopPrompt, EveryDoorRendersQwen3ReferenceSecondTurn) {
  expect_reference("qwen3", true);
}

TEST(ToolLoopPrompt, EveryDoorRendersLlama3ReferenceSecondTurn) {
  expect_reference("llama3", false);
}

}  // namespace
}  // namespace tern::service
