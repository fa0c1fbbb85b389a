#include "engine/json_syntax.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace tern {
namespace {

TEST(JsonSyntax, ValidDocumentsHaveNoError) {
  for (const char* text : {"{}", "[]", " 1 ", "\"a\\u00e9\\n\"", "-0.5e+3", "true", "null",
                           R"({"a": [1, 2, {"b": false}], "c": "d"})", "[[],[[]],{}]"}) {
    EXPECT_FALSE(find_json_syntax_error(text).has_value()) << text;
  }
}

TEST(JsonSyntax, FindsTheFirstBadByte) {
  struct Case {
    const char* text;
    std::size_t offset;
  };
  for (const Case& c :
       {Case{"", 0}, Case{"{", 1}, Case{R"({"a" 1})", 5}, Case{"[1,]", 3}, Case{"[1 2]", 3},
        Case{"{\"a\":1,}", 7}, Case{"01", 1}, Case{"\"tab\there\"", 4}, Case{"[1] x", 4},
        Case{"tru", 0}, Case{"\"\\q\"", 2}, Case{"{\"a\":1]", 6}}) {
    const auto offset = find_json_syntax_error(c.text);
    ASSERT_TRUE(offset.has_value()) << c.text;
    EXPECT_EQ(*offset, c.offset) << c.text;
  }
}

TEST(JsonSyntax, DeepNestingNeedsNoRecursion) {
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_FALSE(find_json_syntax_error(deep).has_value());
  EXPECT_EQ(find_json_syntax_error(std::string(1'000'000, '[')), 1'000'000u);
}

TEST(JsonSyntax, DescribesLineAndColumn) {
  EXPECT_EQ(describe_json_error("{\n  \"a\": 1,\n  \"b\" 2\n}", "bad"), "bad at line 3, column 7");
  EXPECT_EQ(describe_json_error("[1]", "too deep"), "too deep");
}

// Regression: a malformed tokenizer.json was reported without any position.
TEST(JsonSyntax, TokenizerLoadErrorNamesFileAndPosition) {
  const auto tokenizer =
      engine::Tokenizer::from_json("{\"model\": {\"type\": \"BPE\",\n ]", "", "", "/models/x");
  ASSERT_FALSE(tokenizer.ok());
  const std::string& message = tokenizer.error().message;
  EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
  EXPECT_NE(message.find("at line 2, column 2"), std::string::npos) << message;
}

}  // namespace
}  // namespace tern
