// A request's JSON is parsed once, by its door, and flows down as typed values (issue 29 §4):
// the tools, the history's tool calls and the template kwargs reach the chat template, the tool
// parser and the forced-call grammar without being written back to text and read again. Each
// door's body goes through EngineModelService::start_chat on the test's thread, as the
// preparation pool runs it, and engine::json_parses() counts every parse of JSON text on the
// way. OpenAI and the Responses API send a call's arguments as JSON text inside a string, which
// the door parses once more; Anthropic sends them as an object. The byte-level demo model, with
// a template that renders tools, calls and kwargs, and the hermes tool parser.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "engine/json_parse_count.h"
#include "engine/model/demo_model.h"
#include "engine/registry.h"
#include "service/engine_model_service.h"
#include "tests/support/chat_doors.h"

namespace tern::service {
namespace {

constexpr std::string_view kTemplate =
    "{%- for t in tools %}<tool>{{ t.function.name }}:{{ t.function.parameters | tojson }}"
    "</tool>{% endfor -%}"
    "{%- for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{%- for c in m.tool_calls %}<call>{{ c.function.name }}{{ c.function.arguments | tojson }}"
    "</call>{% endfor %}{% endfor -%}"
    "{%- if flavour is defined %}<{{ flavour }}>{% endif -%}"
    "{%- if add_generation_prompt %}<assistant>{% endif %}";

constexpr std::string_view kParameters =
    R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})";

class RequestJsonParseCountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto dir = std::filesystem::temp_directory_path();
    model_path_ = dir / fmt::format("tern-parse-count-{}.gguf", ::getpid());
    template_path_ = dir / fmt::format("tern-parse-count-{}.jinja", ::getpid());
    ASSERT_TRUE(engine::write_demo_model(model_path_.string()).ok());
    std::ofstream(template_path_) << kTemplate;
    engine::ModelSpec spec;
    spec.name = "demo";
    spec.path = model_path_.string();
    spec.chat_template = template_path_.string();
    spec.tool_parser = "hermes";
    spec.max_num_seqs = 4;
    spec.max_num_batched_tokens = 256;
    spec.kv_cache_bytes = 32ull << 20;
    registry_ = new engine::ModelRegistry({spec}, {1});
    ASSERT_TRUE(registry_->wait_until_loaded().ok());
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
    std::filesystem::remove(model_path_);
    std::filesystem::remove(template_path_);
  }

  // Parses `body` with `parse` and starts its generation; returns the JSON parses it took.
  template <typename Parse>
  std::uint64_t parses_of(std::string_view body, Parse parse) {
    EngineModelService service(*registry_);
    const std::uint64_t before = engine::json_parses();
    auto request = parse(body);
    EXPECT_TRUE(request.ok()) << request.error().param << ": " << request.error().message;
    if (!request.ok()) return 0;
    std::string model_id;
    auto stream = service.start_chat(*request, model_id);
    EXPECT_TRUE(stream.ok()) << stream.error().param << ": " << stream.error().message;
    return engine::json_parses() - before;
  }

  static inline engine::ModelRegistry* registry_ = nullptr;
  static inline std::filesystem::path model_path_;
  static inline std::filesystem::path template_path_;
};

std::string chat_body(std::string_view tool_choice) {
  return fmt::format(
      R"({{"model": "demo", "max_tokens": 4, "tool_choice": {},
          "chat_template_kwargs": {{"flavour": "plain"}},
          "tools": [{{"type": "function", "function": {{"name": "get_weather",
            "parameters": {}}}}}],
          "messages": [{{"role": "user", "content": "Weather in Paris?"}},
            {{"role": "assistant", "content": null, "tool_calls": [{{"id": "call_1",
              "type": "function", "function": {{"name": "get_weather",
              "arguments": "{{\"city\":\"Paris\"}}"}}}}]}},
            {{"role": "tool", "tool_call_id": "call_1", "content": "21 C"}},
            {{"role": "user", "content": "And in Rome?"}}]}})",
      tool_choice, kParameters);
}

std::string responses_body(std::string_view tool_choice) {
  return fmt::format(
      R"({{"model": "demo", "max_output_tokens": 4, "tool_choice": {}, "store": false,
          "tools": [{{"type": "function", "name": "get_weather", "parameters": {}}}],
          "input": [{{"role": "user", "content": "Weather in Paris?"}},
            {{"type": "function_call", "call_id": "call_1", "name": "get_weather",
              "arguments": "{{\"city\":\"Paris\"}}"}},
            {{"type": "function_call_output", "call_id": "call_1", "output": "21 C"}},
            {{"role": "user", "content": "And in Rome?"}}]}})",
      tool_choice, kParameters);
}

std::string anthropic_body(std::string_view tool_choice) {
  return fmt::format(
      R"({{"model": "demo", "max_tokens": 4, "tool_choice": {},
          "tools": [{{"name": "get_weather", "input_schema": {}}}],
          "messages": [{{"role": "user", "content": "Weather in Paris?"}},
            {{"role": "assistant", "content": [{{"type": "tool_use", "id": "toolu_1",
              "name": "get_weather", "input": {{"city": "Paris"}}}}]}},
            {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "toolu_1",
              "content": "21 C"}}, {{"type": "text", "text": "And in Rome?"}}]}}]}})",
      tool_choice, kParameters);
}

using tern::testing::parse_anthropic;
using tern::testing::parse_chat;
using tern::testing::parse_responses;

// The body, and the one call's arguments text.
TEST_F(RequestJsonParseCountTest, OpenAiChatParsesItsBodyAndTheCallArgumentsOnce) {
  EXPECT_EQ(parses_of(chat_body(R"("auto")"), parse_chat), 2u);
}

TEST_F(RequestJsonParseCountTest, ResponsesParsesItsBodyAndTheCallArgumentsOnce) {
  EXPECT_EQ(parses_of(responses_body(R"("auto")"), parse_responses), 2u);
}

TEST_F(RequestJsonParseCountTest, AnthropicParsesItsBodyOnce) {
  EXPECT_EQ(parses_of(anthropic_body(R"({"type": "auto"})"), parse_anthropic), 1u);
}

// A forced call adds the grammar's one read of the tools it compiles (its spec is the tools'
// text, the key its model's grammar cache keeps compiled grammars under); a second request with
// the same tools finds the grammar compiled and parses nothing more, whichever door it came
// through: the Anthropic door's tools, in OpenAI's shape, are the same value.
TEST_F(RequestJsonParseCountTest, AForcedCallAddsOneGrammarCompileUntilTheGrammarIsCached) {
  EXPECT_EQ(parses_of(chat_body(R"("required")"), parse_chat), 3u);
  EXPECT_EQ(parses_of(chat_body(R"("required")"), parse_chat), 2u);
  EXPECT_EQ(parses_of(anthropic_body(R"({"type": "any"})"), parse_anthropic), 1u);
}

}  // namespace
}  // namespace tern::service
