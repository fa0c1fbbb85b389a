// Random and mutated outputs at random split points: the parsers never crash, every call they
// report is well formed, and the parts are the same however the text was split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/tool_call_json.h"
#include "tests/unit/engine/chat/output_parser_test_support.h"

namespace tern::engine::chat {
namespace {

using testing::output_cases;
using testing::OutputCase;
using testing::parse_bytes;
using testing::parse_pieces;
using testing::parse_whole;
using testing::ParserSpec;
using testing::same_parse;

// Fragments that steer the parsers into their every state.
const std::vector<std::string>& fragments() {
  static const std::vector<std::string> all = {
      "<think>",
      "</think>",
      "<tool_call>",
      "</tool_call>",
      "<|python_tag|>",
      "[TOOL_CALLS]",
      "[ARGS]",
      "<｜tool▁calls▁begin｜>",
      "<｜tool▁call▁begin｜>",
      "<｜tool▁sep｜>",
      "<｜tool▁call▁end｜>",
      "<｜tool▁calls▁end｜>",
      "function",
      "```json\n",
      "```",
      "{",
      "}",
      "[",
      "]",
      "\"",
      "\\",
      ":",
      ",",
      ";",
      " ",
      "\n",
      "\"name\": ",
      "\"arguments\": ",
      "\"parameters\": ",
      "\"f\"",
      "\"search\"",
      "f",
      "search",
      "{}",
      "日本",
      "🙂",
      "é",
      "\xff",
      "\xe6\x97",
      "1e3",
      "null",
      "<",
      "</",
      "<tool_c",
      "<｜tool",
      R"({"name": "f", "arguments": {"x": "}"}})",
  };
  return all;
}

std::vector<ParserSpec> specs() {
  return {
      {.tools = "hermes"},
      {.tools = "llama3_json"},
      {.tools = "mistral"},
      {.tools = "deepseek_v3"},
      {.reasoning = "qwen3", .tools = "hermes"},
      {.reasoning = "deepseek_r1", .tools = "deepseek_v3", .starts_in_reasoning = true},
      {.reasoning = "qwen3"},
  };
}

std::string mutate(std::string text, std::mt19937& random) {
  const auto& pieces = fragments();
  const int edits = std::uniform_int_distribution<int>(0, 4)(random);
  for (int edit = 0; edit < edits; ++edit) {
    const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size())(random);
    switch (std::uniform_int_distribution<int>(0, 3)(random)) {
      case 0:  // splice a fragment in
        text.insert(
            at, pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(random)]);
        break;
      case 1:  // cut a few bytes (perhaps inside a marker or a UTF-8 sequence)
        text.erase(at, std::uniform_int_distribution<std::size_t>(1, 4)(random));
        break;
      case 2:  // a random byte
        text.insert(at, 1, static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random)));
        break;
      default:  // truncation, as max_tokens would
        text.resize(at);
        break;
    }
  }
  return text;
}

std::string random_output(std::mt19937& random) {
  const auto& pieces = fragments();
  std::string text;
  const int count = std::uniform_int_distribution<int>(0, 24)(random);
  for (int i = 0; i < count; ++i) {
    text += pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(random)];
  }
  return text;
}

// Random cut points, sorted, splitting `text` into pieces.
std::vector<std::string_view> random_pieces(std::string_view text, std::mt19937& random) {
  std::vector<std::size_t> cuts;
  const int count = std::uniform_int_distribution<int>(1, 6)(random);
  for (int i = 0; i < count; ++i) {
    cuts.push_back(std::uniform_int_distribution<std::size_t>(0, text.size())(random));
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string_view> pieces;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    pieces.push_back(text.substr(from, cut - from));
    from = cut;
  }
  pieces.push_back(text.substr(from));
  return pieces;
}

void check(const ParserSpec& spec, const std::string& text, std::mt19937& random, bool bytes) {
  const ParsedOutput whole = parse_whole(spec, text);
  for (const ParsedToolCall& call : whole.tool_calls) {
    ASSERT_TRUE(is_known_tool(call.name, spec.tool_names)) << call.name;
    ASSERT_TRUE(!call.arguments.empty() && call.arguments.front() == '{' &&
                is_valid_json(call.arguments))
        << call.arguments;
  }
  ASSERT_TRUE(same_parse(whole, parse_pieces(spec, random_pieces(text, random))))
      << spec.reasoning << "+" << spec.tools << " text: " << text;
  if (bytes) {
    ASSERT_TRUE(same_parse(whole, parse_bytes(spec, text)))
        << spec.reasoning << "+" << spec.tools << " text: " << text;
  }
}

TEST(OutputParserFuzz, MutatedCases) {
  std::mt19937 random(20240518);
  const std::vector<OutputCase> cases = output_cases();
  for (int round = 0; round < 3000; ++round) {
    const OutputCase& base = cases[round % cases.size()];
    const std::string text = mutate(base.text, random);
    check(base.spec, text, random, round % 4 == 0);
    if (HasFatalFailure()) return;
  }
}

TEST(OutputParserFuzz, RandomFragments) {
  std::mt19937 random(7);
  const std::vector<ParserSpec> all_specs = specs();
  for (int round = 0; round < 3000; ++round) {
    const std::string text = random_output(random);
    check(all_specs[round % all_specs.size()], text, random, round % 3 == 0);
    if (HasFatalFailure()) return;
  }
}

TEST(OutputParserFuzz, EveryCaseUnderEveryParser) {
  // Each format's output through every other parser: never a crash, always split-invariant.
  std::mt19937 random(11);
  for (const ParserSpec& spec : specs()) {
    for (const OutputCase& output : output_cases()) {
      check(spec, output.text, random, true);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace tern::engine::chat
