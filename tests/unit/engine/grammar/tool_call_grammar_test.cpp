#include "engine/grammar/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/grammar_matcher.h"

namespace tern::engine::grammar {
namespace {

constexpr std::string_view kTools = R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}}},
  {"type":"function","function":{"name":"now"}}])";

bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(ToolCallGrammar, HermesCallsNameAToolWithArgumentsThatFitItsSchema) {
  const auto grammar = compile_tool_calls(kTools, "", "hermes", true);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(accepts(*grammar, weather));
  EXPECT_TRUE(accepts(*grammar, now));
  EXPECT_TRUE(accepts(*grammar, weather + "\n" + now));
  EXPECT_FALSE(accepts(*grammar, ""));  // a call is required
  EXPECT_FALSE(accepts(*grammar, "Sure!" + weather));
  EXPECT_FALSE(accepts(
      *grammar, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(
      *grammar,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"P\",\"unit\":\"k\"}}"
      "\n</tool_call>"));
  EXPECT_FALSE(
      accepts(*grammar, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ToolCallGrammar, ANamedToolAndOneCallWithoutParallelCalls) {
  const auto grammar = compile_tool_calls(kTools, "now", "hermes", false);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(accepts(*grammar, now));
  EXPECT_FALSE(accepts(*grammar, now + "\n" + now));
  EXPECT_FALSE(accepts(
      *grammar,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"P\"}}\n</tool_call>"));
}

TEST(ToolCallGrammar, Llama3JsonCallsUseParametersAndSemicolons) {
  const auto grammar = compile_tool_calls(kTools, "", "llama3_json", true);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, R"({"name": "now", "parameters": {}})"));
  EXPECT_TRUE(accepts(
      *grammar,
      R"({"name": "now", "parameters": {}}; {"name": "get_weather", "parameters": {"city":"x"}})"));
  EXPECT_FALSE(accepts(*grammar, R"({"name": "now", "arguments": {}})"));
}

TEST(ToolCallGrammar, ErrorsNameTheFieldAndTheTool) {
  const auto unknown = compile_tool_calls(kTools, "nope", "hermes", true);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "tool_choice");
  EXPECT_NE(unknown.error().message.find("'nope'"), std::string::npos);
  const auto special = compile_tool_calls(kTools, "", "mistral", true);
  ASSERT_FALSE(special.ok());
  EXPECT_NE(special.error().message.find("'mistral'"), std::string::npos);
  const auto none = compile_tool_calls(kTools, "", "", true);
  ASSERT_FALSE(none.ok());
  const auto bad = compile_tool_calls(
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
          "properties":{"a":{"not":{}}}}}}])",
      "", "hermes", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "tools");
  EXPECT_NE(bad.error().message.find("tools[0].function.parameters"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("/properties/a"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace tern::engine::grammar
