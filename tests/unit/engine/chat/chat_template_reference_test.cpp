// Real chat templates (Qwen3, Llama 3) rendered over the reference contexts must equal
// @huggingface/jinja's output byte for byte.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/value_json.h"
#include "tests/support/shared_data.h"

namespace tern::engine::chat {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void check_reference(const std::filesystem::path& config_path,
                     const std::filesystem::path& reference_path) {
  Expected<std::string> source = chat_template_from_tokenizer_config(read_file(config_path));
  ASSERT_TRUE(source.ok()) << source.error().message;
  Expected<ChatTemplate> compiled = ChatTemplate::parse(*source);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;

  std::ifstream lines(reference_path);
  std::string line;
  int cases = 0;
  int passed = 0;
  simdjson::dom::parser parser;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ++cases;
    simdjson::padded_string padded(line);
    simdjson::dom::element record;
    ASSERT_EQ(parser.parse(padded).get(record), simdjson::SUCCESS);
    std::string_view name;
    std::string_view expected;
    simdjson::dom::element context;
    ASSERT_EQ(record["case"].get_string().get(name), simdjson::SUCCESS);
    ASSERT_EQ(record["rendered"].get_string().get(expected), simdjson::SUCCESS);
    ASSERT_EQ(record["context"].get(context), simdjson::SUCCESS);
    Expected<Value> value = from_json(context);
    ASSERT_TRUE(value.ok()) << value.error().message;
    Expected<std::string> rendered = compiled->render(*value);
    ASSERT_TRUE(rendered.ok()) << name << ": " << rendered.error().message;
    EXPECT_EQ(*rendered, expected) << "case " << name;
    if (*rendered == expected) ++passed;
    // The JSON-text entry point gives the same bytes.
    Expected<std::string> from_text = compiled->render_json(simdjson::minify(context));
    ASSERT_TRUE(from_text.ok()) << from_text.error().message;
    EXPECT_EQ(*from_text, *rendered) << "case " << name;
  }
  EXPECT_GT(cases, 0) << "no cases in " << reference_path;
  std::cout << reference_path.filename().string() << ": " << passed << "/" << cases
            << " byte-identical\n";
}

TEST(ChatTemplateReference, Qwen3) {
  TERN_REQUIRE_SHARED(config, "tokenizers/qwen3/tokenizer_config.json");
  TERN_REQUIRE_SHARED(reference, "reference/qwen3.chat_template.jsonl");
  check_reference(config, reference);
}

TEST(ChatTemplateReference, Llama3) {
  TERN_REQUIRE_SHARED(config, "tokenizers/llama3/tokenizer_config.json");
  TERN_REQUIRE_SHARED(reference, "reference/llama3.chat_template.jsonl");
  check_reference(config, reference);
}

TEST(ChatTemplateReference, TemplateListPicksDefault) {
  const char* config =
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})";
  Expected<std::string> source = chat_template_from_tokenizer_config(config);
  ASSERT_TRUE(source.ok()) << source.error().message;
  EXPECT_EQ(*source, "D");
  Expected<std::string> tool = chat_template_from_tokenizer_config(config, "tool_use");
  ASSERT_TRUE(tool.ok());
  EXPECT_EQ(*tool, "T");
  EXPECT_FALSE(chat_template_from_tokenizer_config(config, "missing").ok());
  EXPECT_FALSE(chat_template_from_tokenizer_config("{}").ok());
  EXPECT_FALSE(chat_template_from_tokenizer_config("not json").ok());
}

TEST(ChatTemplateReference, ChatmlFallback) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(chatml_fallback_template());
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  Expected<std::string> rendered = compiled->render_json(
      R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}],
          "add_generation_prompt": true})");
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  EXPECT_EQ(*rendered,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// The fallback renders tools, tool calls and tool results the way Qwen's (Hermes-style)
// template does: byte for byte what Qwen3's template gives on its tool reference case.
TEST(ChatTemplateReference, ChatmlFallbackRendersToolsAsQwen3Does) {
  TERN_REQUIRE_SHARED(reference_path, "reference/qwen3.chat_template.jsonl");
  Expected<ChatTemplate> compiled = ChatTemplate::parse(chatml_fallback_template());
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  std::ifstream lines(reference_path);
  std::string line;
  simdjson::dom::parser parser;
  int checked = 0;
  while (std::getline(lines, line)) {
    simdjson::padded_string padded(line);
    simdjson::dom::element record;
    ASSERT_EQ(parser.parse(padded).get(record), simdjson::SUCCESS);
    std::string_view name;
    ASSERT_EQ(record["case"].get_string().get(name), simdjson::SUCCESS);
    if (name != "tools_and_call") continue;
    std::string_view expected;
    ASSERT_EQ(record["rendered"].get_string().get(expected), simdjson::SUCCESS);
    simdjson::dom::element context;
    ASSERT_EQ(record["context"].get(context), simdjson::SUCCESS);
    Expected<std::string> rendered = compiled->render_json(simdjson::minify(context));
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(*rendered, expected);
    ++checked;
  }
  EXPECT_EQ(checked, 1) << "no tools_and_call case in " << reference_path;
}

// An assistant turn that only calls tools has content null (what OpenAI clients send back).
TEST(ChatTemplateReference, ChatmlFallbackAcceptsNullContent) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(chatml_fallback_template());
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  Expected<std::string> rendered = compiled->render_json(R"({"messages": [
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": null,
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
      {"role": "tool", "content": "ok"}]})");
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  EXPECT_EQ(*rendered,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
            "{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n");
}

}  // namespace
}  // namespace tern::engine::chat
