// The engine's side of the output parsers, from a real tokenizer: which special tokens it must
// keep in the text, and the reasoning budget's markers.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "engine/chat/value_json.h"
#include "engine/tokenizer/tokenizer.h"
#include "service/api/tool_values.h"
#include "service/chat_output_parsers.h"
#include "tests/support/shared_data.h"

namespace tern::service {
namespace {

std::int32_t single_token(const engine::Tokenizer& tokenizer, std::string_view text) {
  const std::vector<std::int32_t> ids = tokenizer.encode(text, false);
  EXPECT_EQ(ids.size(), 1u) << text;
  return ids.empty() ? -1 : ids[0];
}

TEST(ChatOutputParsers, ReasoningBudgetForcesQwen3sCloseMarker) {
  TERN_REQUIRE_SHARED(path, "tokenizers/qwen3/tokenizer.json");
  auto tokenizer = engine::Tokenizer::load(path.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  OutputParserSpec spec;
  spec.reasoning_parser = "qwen3";
  spec.starts_in_reasoning = true;
  const engine::ReasoningBudget budget = reasoning_budget_for(**tokenizer, spec, 64);
  ASSERT_TRUE(budget.active());
  EXPECT_EQ(budget.max_tokens, 64);
  EXPECT_TRUE(budget.starts_in_reasoning);
  EXPECT_EQ(budget.open_token, single_token(**tokenizer, "<think>"));
  EXPECT_EQ(budget.close_token, single_token(**tokenizer, "</think>"));
  // What is forced reads back as the template closes a turn's reasoning.
  EXPECT_EQ((*tokenizer)->decode(budget.close_tokens, false), "\n</think>\n\n");
  EXPECT_NE(std::ranges::find(budget.close_tokens, budget.close_token), budget.close_tokens.end());

  // No budget, or no reasoning parser: nothing is forced.
  EXPECT_FALSE(reasoning_budget_for(**tokenizer, spec, std::nullopt).active());
  EXPECT_FALSE(reasoning_budget_for(**tokenizer, OutputParserSpec{}, 64).active());
  // A constrained answer follows the reasoning, which the engine then tracks without a cap.
  const engine::ReasoningBudget tracked =
      reasoning_budget_for(**tokenizer, spec, std::nullopt, true);
  EXPECT_TRUE(tracked.active());
  EXPECT_EQ(tracked.max_tokens, std::numeric_limits<std::int32_t>::max());
}

TEST(ChatOutputParsers, OnlyMarkersThatAreSpecialTokensAreKept) {
  TERN_REQUIRE_SHARED(path, "tokenizers/qwen3/tokenizer.json");
  auto tokenizer = engine::Tokenizer::load(path.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  // Qwen3's <tool_call> and <think> are added tokens but not special ones: decode writes them
  // anyway, so there is nothing to keep.
  OutputParserSpec spec;
  spec.tool_parser = "hermes";
  spec.reasoning_parser = "qwen3";
  for (const std::int32_t token : parser_marker_tokens(**tokenizer, spec)) {
    EXPECT_TRUE((*tokenizer)->is_special(token)) << token;
  }
  for (const std::string_view marker : {"<tool_call>", "<think>"}) {
    const std::int32_t id = single_token(**tokenizer, marker);
    EXPECT_EQ((*tokenizer)->decode({&id, 1}, true), marker) << "skip_special keeps " << marker;
  }
}

TEST(ChatOutputParsers, FunctionNamesOfTheRequestsTools) {
  const auto names = [](std::string_view json) {
    auto tools = engine::chat::parse_json_value(json);
    EXPECT_TRUE(tools.ok()) << json;
    return tools.ok() ? api::function_names(*tools) : std::vector<std::string>{};
  };
  EXPECT_EQ(names(R"([{"type":"function","function":{"name":"a"}},)"
                  R"({"type":"function","function":{"name":"b","parameters":{}}}])"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(api::function_names(engine::chat::Value()).empty());
  EXPECT_TRUE(names(R"({"name":"a"})").empty());
  EXPECT_TRUE(names(R"([{"name":"a"}, 3])").empty());
}

}  // namespace
}  // namespace tern::service
