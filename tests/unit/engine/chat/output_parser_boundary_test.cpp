// However the output is split, the parsers give the same parts: at every byte (two pieces, and
// one byte at a time) and at every token boundary of the real Qwen3 and Llama 3 tokenizers,
// whose special tokens (`<think>`, `<tool_call>`) arrive as single pieces.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/engine/chat/output_parser_test_support.h"

namespace tern::engine::chat {
namespace {

using testing::output_cases;
using testing::OutputCase;
using testing::parse_bytes;
using testing::parse_pieces;
using testing::parse_split;
using testing::parse_whole;
using testing::same_parse;

TEST(OutputParserBoundary, EverySplitInTwoMatchesTheWhole) {
  for (const OutputCase& output : output_cases()) {
    const ParsedOutput whole = parse_whole(output.spec, output.text);
    for (std::size_t cut = 0; cut <= output.text.size(); ++cut) {
      ASSERT_TRUE(same_parse(whole, parse_split(output.spec, output.text, cut)))
          << output.name << " cut at byte " << cut;
    }
  }
}

TEST(OutputParserBoundary, ByteByByteMatchesTheWhole) {
  for (const OutputCase& output : output_cases()) {
    EXPECT_TRUE(
        same_parse(parse_whole(output.spec, output.text), parse_bytes(output.spec, output.text)))
        << output.name;
  }
}

TEST(OutputParserBoundary, CasesParseAsIntended) {
  // Spot checks that the shared cases exercise what their names say.
  std::map<std::string, ParsedOutput> parsed;
  for (const OutputCase& output : output_cases()) {
    parsed[output.name] = parse_whole(output.spec, output.text);
  }
  EXPECT_EQ(parsed["hermes_two"].tool_calls.size(), 2u);
  EXPECT_EQ(parsed["hermes_broken_json"].tool_calls.size(), 1u);
  EXPECT_EQ(parsed["hermes_unicode"].content, "héllo 日本 🙂 ");
  EXPECT_EQ(parsed["llama3_python_tag"].tool_calls.size(), 2u);
  EXPECT_EQ(parsed["mistral_array"].tool_calls.size(), 2u);
  EXPECT_EQ(parsed["mistral_v11"].tool_calls.size(), 2u);
  EXPECT_EQ(parsed["deepseek_v3"].tool_calls.size(), 2u);
  EXPECT_EQ(parsed["deepseek_v31"].tool_calls.size(), 1u);
  EXPECT_EQ(parsed["qwen3_reasoning_then_call"].reasoning,
            "The user wants weather. <tool_call> is how.");
  EXPECT_EQ(parsed["qwen3_reasoning_then_call"].tool_calls.size(), 1u);
  EXPECT_EQ(parsed["qwen3_open_prompt"].reasoning, "Thinking 日本…");
  EXPECT_EQ(parsed["deepseek_r1"].content, "The answer is 4.");
}

const Tokenizer* load_tokenizer(const std::string& model) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  auto& slot = loaded[model];
  if (!slot) {
    const std::string path =
        std::string(TERN_SHARED_DIR) + "/tokenizers/" + model + "/tokenizer.json";
    if (!std::filesystem::exists(path)) return nullptr;
    auto tokenizer = Tokenizer::load(path);
    if (!tokenizer) {
      ADD_FAILURE() << tokenizer.error().message;
      return nullptr;
    }
    slot = std::move(tokenizer.value());
  }
  return slot.get();
}

// The text of each token of `text`, special tokens kept, as the engine's stream hands them over.
std::vector<std::string> token_pieces(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<std::string> pieces;
  for (std::int32_t id : tokenizer.encode(text, false)) {
    std::string piece;
    tokenizer.append_token_bytes(id, /*skip_special=*/false, piece);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

void check_token_boundaries(const std::string& model) {
  const Tokenizer* tokenizer = load_tokenizer(model);
  if (tokenizer == nullptr) {
    GTEST_SKIP() << "no " << model << " tokenizer under " << TERN_SHARED_DIR << "/tokenizers";
  }
  for (const OutputCase& output : output_cases()) {
    const std::vector<std::string> pieces = token_pieces(*tokenizer, output.text);
    std::string joined;
    for (const std::string& piece : pieces) joined += piece;
    ASSERT_EQ(joined, output.text) << output.name << ": the tokens do not spell the text";
    const std::vector<std::string_view> views(pieces.begin(), pieces.end());
    EXPECT_TRUE(same_parse(parse_whole(output.spec, output.text), parse_pieces(output.spec, views)))
        << model << " " << output.name;
  }
}

TEST(OutputParserBoundary, Qwen3TokenBoundaries) {
  check_token_boundaries("qwen3");
}

TEST(OutputParserBoundary, Llama3TokenBoundaries) {
  check_token_boundaries("llama3");
}

// Markers that are single tokens reach the parser whole, as one piece.
TEST(OutputParserBoundary, Qwen3MarkersAreSingleTokens) {
  const Tokenizer* tokenizer = load_tokenizer("qwen3");
  if (tokenizer == nullptr) GTEST_SKIP() << "no qwen3 tokenizer under " << TERN_SHARED_DIR;
  for (const std::string& marker :
       std::vector<std::string>{"<think>", "</think>", "<tool_call>", "</tool_call>"}) {
    EXPECT_EQ(token_pieces(*tokenizer, marker), std::vector<std::string>{marker}) << marker;
  }
}

TEST(OutputParserBoundary, Llama3PythonTag) {
  const Tokenizer* tokenizer = load_tokenizer("llama3");
  if (tokenizer == nullptr) GTEST_SKIP() << "no llama3 tokenizer under " << TERN_SHARED_DIR;
  const std::string text = R"(<|python_tag|>{"name": "f", "parameters": {"x": 1}})";
  const std::vector<std::string> pieces = token_pieces(*tokenizer, text);
  const std::vector<std::string_view> views(pieces.begin(), pieces.end());
  const ParsedOutput out = parse_pieces({.tools = "llama3_json"}, views);
  ASSERT_EQ(out.tool_calls.size(), 1u) << testing::describe(out);
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"x": 1})");
  // Llama 3.1 and later have <|python_tag|> as one special token; Llama 3.0 (whose id 128010 is
  // a reserved token) spells it in pieces, which the parser must join all the same.
  const std::vector<std::int32_t> tag_ids = tokenizer->encode("<|python_tag|>", false);
  if (tag_ids.size() == 1) {
    EXPECT_TRUE(tokenizer->is_special(tag_ids[0]));
    EXPECT_EQ(pieces.front(), "<|python_tag|>");
  }
}

}  // namespace
}  // namespace tern::engine::chat
