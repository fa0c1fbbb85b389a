#include "engine/grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace tern::engine::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back();
  return std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{256});
}

GrammarSpec schema(std::string text) {
  GrammarSpec spec;
  spec.kind = GrammarSpec::Kind::json_schema;
  spec.text = std::move(text);
  spec.field = "response_format";
  return spec;
}

TEST(GrammarCache, CompilesOnceAndNamesTheFieldOfAnError) {
  GrammarCache cache(byte_vocabulary(), std::chrono::milliseconds(2000));
  const auto first = cache.get(schema(R"({"type":"integer"})"));
  ASSERT_TRUE(first.ok()) << first.error().message;
  const auto again = cache.get(schema(R"({"type":"integer"})"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());
  const auto bad = cache.get(schema(R"({"type":"integer","not":{}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "response_format");
  EXPECT_EQ(bad.error().kind, ErrorKind::invalid_field);
  const GrammarCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.failed, 1);
}

// A model whose requests never ask for a grammar never builds its vocabulary's tries.
TEST(GrammarCache, MakesTheVocabularyWhenTheFirstGrammarIsAskedFor) {
  int made = 0;
  GrammarCache cache(
      [&made] {
        ++made;
        return byte_vocabulary();
      },
      std::chrono::milliseconds(2000));
  EXPECT_EQ(made, 0);
  ASSERT_TRUE(cache.get(schema(R"({"type":"boolean"})")).ok());
  ASSERT_TRUE(cache.get(schema(R"({"type":"null"})")).ok());
  EXPECT_EQ(made, 1);
}

// A compile that outlasts the timeout is an error when the timeout ends, not when it does.
TEST(GrammarCache, ACompileTooSlowIsAnErrorAtTheTimeout) {
  GrammarCache cache(byte_vocabulary(), std::chrono::milliseconds(1));
  std::string big = R"({"type":"object","properties":{)";
  for (int i = 0; i < 400; ++i) {
    big += (i ? "," : "") + std::string(R"("p)") + std::to_string(i) +
           R"(":{"type":"string","maxLength":200})";
  }
  big += "}}";
  const auto start = std::chrono::steady_clock::now();
  const auto slow = cache.get(schema(big));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("did not compile in time"), std::string::npos)
      << slow.error().message;
  EXPECT_NE(slow.error().message.find("structured_outputs_compile_timeout_ms is 1"),
            std::string::npos);
  EXPECT_LT(waited, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace tern::engine::grammar
