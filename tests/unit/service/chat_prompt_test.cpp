// A request's messages and tools through render_chat_prompt: the ChatML fallback's tool-call
// history, and tools refused on a model whose own template cannot render them.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/model_chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "service/api/chat_request.h"
#include "service/chat_prompt.h"
#include "service/openai/chat_completion_parser.h"

namespace tern::service {
namespace {

// A one-token tokenizer: only its chat template (or the lack of one) matters here.
engine::ModelChatTemplate chat_template_of(std::optional<std::string> source) {
  auto tokenizer = engine::Tokenizer::from_json(
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})", "", "", "inline");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  if (source) (*tokenizer)->set_chat_template(std::move(*source));
  auto loaded = engine::ModelChatTemplate::load(**tokenizer);
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  return std::move(*loaded);
}

api::ApiResult<std::string> render(const engine::ModelChatTemplate& chat_template,
                                   std::string_view body) {
  auto request = openai::parse_chat_completion_request(body);
  if (!request) return request.error();
  return render_chat_prompt(
      chat_template,
      ChatPromptInput{&request->messages, request->tools, request->chat_template_kwargs,
                      request->add_generation_prompt, request->continue_final_message});
}

constexpr std::string_view kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather",
        "description": "Get the weather for a city", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}})";

// The system block that Qwen's template (and so the fallback) writes for kWeatherTool.
constexpr std::string_view kWeatherToolsBlock =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    R"({"type": "function", "function": {"name": "get_weather", "description": "Get the weather )"
    R"(for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", )"
    R"("description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, )"
    R"("required": ["city"]}}})"
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    R"({"name": <function-name>, "arguments": <args-json-object>})"
    "\n</tool_call><|im_end|>\n";

// An OpenAI client's tool round trip: the assistant turn has content null and its arguments as a
// JSON string. The expected prompt is what Qwen3's own template renders for the same
// conversation (../shared/reference/qwen3.chat_template.jsonl, case tools_and_call).
TEST(ChatPromptFallback, RendersToolCallWithNullContentAndToolResultAsQwenDoes) {
  const auto chatml = chat_template_of(std::nullopt);
  ASSERT_TRUE(chatml.is_fallback());
  const auto prompt = render(chatml, std::string(R"({"tools": [)") + std::string(kWeatherTool) +
                                         R"(], "messages": [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}]})");
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(*prompt, std::string("<|im_start|>system\n") + std::string(kWeatherToolsBlock) +
                         "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                         "<|im_start|>assistant\n<tool_call>\n"
                         R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}})"
                         "\n</tool_call><|im_end|>\n"
                         "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>"
                         "<|im_end|>\n<|im_start|>assistant\n");
}

// A system message joins the tools block; an assistant turn with text and two calls (arguments
// as an object, and as a string that is not JSON, kept verbatim); consecutive tool results share
// one user turn.
TEST(ChatPromptFallback, RendersSystemTextParallelCallsAndGroupedToolResults) {
  const auto chatml = chat_template_of(std::nullopt);
  const auto prompt = render(chatml, std::string(R"({"tools": [)") + std::string(kWeatherTool) +
                                         R"(], "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Paris and Rome?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "get_weather",
        "arguments": {"city": "Paris"}}},
      {"id": "b", "type": "function", "function": {"name": "get_weather",
        "arguments": "city=Rome"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "21"},
    {"role": "tool", "tool_call_id": "b", "content": "25"},
    {"role": "assistant", "content": "Paris 21, Rome 25."},
    {"role": "user", "content": "Thanks"}]})");
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(*prompt, std::string("<|im_start|>system\nBe brief.\n\n") +
                         std::string(kWeatherToolsBlock) +
                         "<|im_start|>user\nParis and Rome?<|im_end|>\n"
                         "<|im_start|>assistant\nChecking.\n<tool_call>\n"
                         R"({"name": "get_weather", "arguments": {"city": "Paris"}})"
                         "\n</tool_call>\n<tool_call>\n"
                         R"({"name": "get_weather", "arguments": city=Rome})"
                         "\n</tool_call><|im_end|>\n"
                         "<|im_start|>user\n<tool_response>\n21\n</tool_response>\n"
                         "<tool_response>\n25\n</tool_response><|im_end|>\n"
                         "<|im_start|>assistant\nParis 21, Rome 25.<|im_end|>\n"
                         "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n");
}

// Without tools the fallback is plain ChatML, as before.
TEST(ChatPromptFallback, PlainConversationIsChatml) {
  const auto chatml = chat_template_of(std::nullopt);
  const auto prompt = render(chatml, R"({"messages": [{"role": "system", "content": "S"},
    {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"},
    {"role": "user", "content": "Bye"}]})");
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(*prompt,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// Llama 3's template (../shared/tokenizers/llama3) never reads `tools`: the model would never
// see them, so the request is refused rather than rendered without them.
constexpr std::string_view kToolBlindTemplate =
    "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}";

TEST(ChatPromptTools, RefusedWhenTheTemplateCannotRenderThem) {
  const auto blind = chat_template_of(std::string(kToolBlindTemplate));
  ASSERT_FALSE(blind.is_fallback());
  const auto prompt = render(blind, std::string(R"({"tools": [)") + std::string(kWeatherTool) +
                                        R"(], "messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_FALSE(prompt.ok());
  EXPECT_EQ(prompt.error().status, 400);
  EXPECT_EQ(prompt.error().type, "invalid_request_error");
  EXPECT_EQ(prompt.error().param, "tools");
  EXPECT_NE(prompt.error().message.find("chat template"), std::string::npos)
      << prompt.error().message;
  EXPECT_NE(prompt.error().message.find("never reads `tools`"), std::string::npos)
      << prompt.error().message;
}

TEST(ChatPromptTools, NoToolsOrAnEmptyListStillRenders) {
  const auto blind = chat_template_of(std::string(kToolBlindTemplate));
  for (std::string_view tools : {"", R"("tools": [],)"}) {
    const auto prompt = render(blind, std::string("{") + std::string(tools) +
                                          R"("messages": [{"role": "user", "content": "Hi"}]})");
    ASSERT_TRUE(prompt.ok()) << prompt.error().message;
    EXPECT_EQ(*prompt,
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
  }
}

TEST(ChatPromptTools, RenderedByATemplateThatReadsThem) {
  const auto aware = chat_template_of(std::string(
      "{% if tools %}[{{ tools | map(attribute='function') | map(attribute='name') | join(',') }}]"
      "{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"));
  const auto prompt = render(aware, std::string(R"({"tools": [)") + std::string(kWeatherTool) +
                                        R"(], "messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(*prompt, "[get_weather]Hi");
}

}  // namespace
}  // namespace tern::service
