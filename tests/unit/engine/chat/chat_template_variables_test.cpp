// ChatTemplate::reads_variable: how tern tells a template that renders `tools` from one that
// would drop them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "tests/support/shared_data.h"

namespace tern::engine::chat {
namespace {

bool reads_tools(std::string_view source) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(source);
  EXPECT_TRUE(compiled.ok()) << compiled.error().message;
  return compiled.ok() && compiled->reads_variable("tools");
}

TEST(ChatTemplateVariables, ReadingToolsCounts) {
  EXPECT_TRUE(reads_tools("{% if tools %}T{% endif %}"));
  EXPECT_TRUE(reads_tools("{% for t in tools %}{{ t | tojson }}{% endfor %}"));
  EXPECT_TRUE(reads_tools("{{- tools is defined }}"));
  EXPECT_TRUE(reads_tools("{% set tools = tools or [] %}{{ tools }}"));
  EXPECT_TRUE(reads_tools("{{ render(tools=tools) }}"));
}

TEST(ChatTemplateVariables, OtherMentionsOfTheNameDoNot) {
  EXPECT_FALSE(reads_tools("tools {{ 'tools' }}{# tools #}"));
  EXPECT_FALSE(reads_tools("{% for m in messages %}{{ m.tools }}{% endfor %}"));
  EXPECT_FALSE(reads_tools("{{ render(tools=[]) }}"));
  EXPECT_FALSE(reads_tools("{% set tools = [] %}"));
  EXPECT_FALSE(reads_tools("{{ toolset }}{{ custom_tools }}"));
}

TEST(ChatTemplateVariables, FallbackReadsTools) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(chatml_fallback_template());
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  EXPECT_TRUE(compiled->reads_variable("tools"));
}

std::string template_of(const std::filesystem::path& config_path) {
  std::ifstream in(config_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  Expected<std::string> source = chat_template_from_tokenizer_config(text.str());
  EXPECT_TRUE(source.ok()) << source.error().message;
  return source.ok() ? *source : std::string();
}

// Qwen3's template renders tools; this Llama 3 template has no tool support at all.
TEST(ChatTemplateVariables, RealTemplates) {
  TERN_REQUIRE_SHARED(qwen3, "tokenizers/qwen3/tokenizer_config.json");
  TERN_REQUIRE_SHARED(llama3, "tokenizers/llama3/tokenizer_config.json");
  EXPECT_TRUE(reads_tools(template_of(qwen3)));
  EXPECT_FALSE(reads_tools(template_of(llama3)));
}

}  // namespace
}  // namespace tern::engine::chat
