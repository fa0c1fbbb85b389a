#include "engine/grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine::grammar {
namespace {

// A JSON-like language written with the builder: objects, arrays, strings with escapes, integers.
std::shared_ptr<const Grammar> json_like() {
  GrammarBuilder b;
  const RuleId value = b.rule("value");
  const RuleId object = b.rule("object");
  const RuleId string = b.rule("string");
  const ExprId character =
      b.choice({b.char_class({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true),
                b.sequence({b.literal("\\"),
                            b.choice({b.literal("\""), b.literal("\\"), b.literal("n")})})});
  b.define(string, b.sequence({b.literal("\""), b.repeat(character, 0, GrammarBuilder::kUnbounded),
                               b.literal("\"")}));
  const ExprId pair = b.sequence({b.reference(string), b.literal(":"), b.reference(value)});
  b.define(object,
           b.sequence({b.literal("{"),
                       b.optional(b.sequence({pair, b.repeat(b.sequence({b.literal(","), pair}), 0,
                                                             GrammarBuilder::kUnbounded)})),
                       b.literal("}")}));
  const ExprId integer =
      b.sequence({b.optional(b.literal("-")), b.repeat(b.char_class({{'0', '9'}}), 1, 6)});
  const ExprId array =
      b.sequence({b.literal("["),
                  b.optional(b.sequence({b.reference(value),
                                         b.repeat(b.sequence({b.literal(","), b.reference(value)}),
                                                  0, GrammarBuilder::kUnbounded)})),
                  b.literal("]")});
  b.define(value, b.choice({b.reference(string), b.reference(object), array, integer}));
  const RuleId root = b.rule("root");
  b.define(root, b.reference(object));
  auto built = b.build(root);
  EXPECT_TRUE(built.ok()) << (built.ok() ? "" : built.error().message);
  return std::move(built).value();
}

bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(GrammarMatcher, AcceptsTheSentencesOfTheLanguageOnly) {
  const auto g = json_like();
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_TRUE(accepts(g, R"({"a":1,"b":[1,-2,{"c":"d\"e"}],"é":"\\"})"));
  EXPECT_TRUE(accepts(g, "{\"\xF0\x9F\x98\x80\":[]}"));
  EXPECT_FALSE(accepts(g, "{"));
  EXPECT_FALSE(accepts(g, R"({"a":1,})"));
  EXPECT_FALSE(accepts(g, R"({"a":"\x"})"));
  EXPECT_FALSE(accepts(g, "{\"a\":1234567}"));       // seven digits: past the bound
  EXPECT_FALSE(accepts(g, "{\"\xED\xA0\x80\":1}"));  // a surrogate is not a code point
  EXPECT_FALSE(accepts(g, "{\"\n\":1}"));
  GrammarMatcher partial(g);
  EXPECT_TRUE(partial.accept_bytes("{\"a\":["));
  EXPECT_FALSE(partial.can_end());
  EXPECT_FALSE(partial.accept_bytes("}"));  // refused, and no move
  EXPECT_TRUE(partial.accept_bytes("]}"));
  EXPECT_TRUE(partial.must_end());
}

TEST(GrammarBuilder, RefusesLeftRecursionUndefinedRulesAndHugeGrammars) {
  {
    GrammarBuilder b;
    const RuleId expr = b.rule("expr");
    b.define(expr,
             b.choice({b.sequence({b.optional(b.literal(" ")), b.reference(expr), b.literal("+1")}),
                       b.literal("1")}));
    const auto built = b.build(expr);
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.error().message.find("\"expr\" is left-recursive"), std::string::npos)
        << built.error().message;
  }
  {
    GrammarBuilder b;
    const RuleId root = b.rule("root");
    b.define(root, b.reference(b.rule("missing")));
    const auto built = b.build(root);
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.error().message.find("undefined rule \"missing\""), std::string::npos);
  }
  {
    GrammarBuilder b;
    const RuleId root = b.rule("root");
    b.define(root, b.repeat(b.repeat(b.literal("ab"), 0, 2000), 0, 2000));
    const auto built = b.build(root);
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.error().message.find("too large"), std::string::npos);
  }
}

TEST(GrammarBuilder, RightRecursionAndNullableLoopsNeedNoGrowingStack) {
  GrammarBuilder b;
  const RuleId list = b.rule("list");
  const RuleId maybe = b.rule("maybe");
  b.define(maybe, b.optional(b.literal("x")));
  b.define(list, b.choice({b.empty(), b.sequence({b.literal("a"), b.reference(list)})}));
  const RuleId root = b.rule("root");
  b.define(root, b.sequence({b.repeat(b.reference(maybe), 0, GrammarBuilder::kUnbounded),
                             b.reference(list)}));
  const auto built = b.build(root);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_TRUE(accepts(*built, ""));
  EXPECT_TRUE(accepts(*built, "xxxaaaa"));
  EXPECT_FALSE(accepts(*built, "aax"));
}

// Tokens that cross structure, split UTF-8, carry quotes and backslashes.
std::vector<std::string> test_tokens() {
  return {"",     "{",         "}",        "{\"",  "\"}",  "\":",  "\",",    "\",\"",    "\"a",
          "a",    "b",         "\xC3\xA9", "\xC3", "\xA9", "\\",   "\\\"",   "\"\\",     "1",
          "12",   "-",         "[",        "]",    "],",   "},\"", "\":{\"", "\":[",     ",",
          " ",    "x\"y",      "\"\"",     "}}",   "1]}",  "\\n",  "n",      "\xF0\x9F", "\x98\x80",
          "ab\"", "\"ab\":1}", "\n",       "[]",   ":",    "\""};
}

std::shared_ptr<const TokenizedGrammar> tokenized_json_like() {
  std::vector<std::string> tokens = test_tokens();
  const auto eos = static_cast<std::int32_t>(tokens.size());
  tokens.emplace_back();  // the end-of-sequence token spells nothing
  auto vocabulary =
      std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{eos});
  return TokenizedGrammar::create(json_like(), std::move(vocabulary)).value();
}

// The mask computed the slow way: each token tried on a fresh matcher after the same bytes.
TokenMask brute_force_mask(const std::shared_ptr<const Grammar>& grammar,
                           const TokenVocabulary& vocabulary, const std::string& history) {
  TokenMask mask(vocabulary.size());
  for (std::int32_t token = 0; token < vocabulary.size(); ++token) {
    GrammarMatcher matcher(grammar);
    if (!matcher.accept_bytes(history)) continue;
    if (vocabulary.is_eos(token)) {
      if (matcher.can_end()) mask.set(token);
      continue;
    }
    const std::string_view bytes = vocabulary.bytes(token);
    if (!bytes.empty() && matcher.accept_bytes(bytes)) mask.set(token);
  }
  return mask;
}

TEST(GrammarMatcher, TokenMasksEqualTryingEveryTokenAlongRandomWalks) {
  const auto tokenized = tokenized_json_like();
  const TokenVocabulary& vocabulary = tokenized->vocabulary();
  int ended = 0;
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(seed);
    GrammarMatcher matcher(tokenized);
    std::string history;
    for (int step = 0; step < 60 && !matcher.ended(); ++step) {
      const TokenMask& mask = matcher.next_token_mask();
      const TokenMask expected = brute_force_mask(tokenized->grammar(), vocabulary, history);
      for (std::int32_t token = 0; token < vocabulary.size(); ++token) {
        ASSERT_EQ(mask.test(token), expected.test(token))
            << "seed " << seed << " after \"" << history << "\" token \"" << vocabulary.bytes(token)
            << "\"";
      }
      std::vector<std::int32_t> allowed;
      for (std::int32_t token = 0; token < vocabulary.size(); ++token) {
        if (mask.test(token)) allowed.push_back(token);
      }
      ASSERT_FALSE(allowed.empty()) << "a dead end after \"" << history << "\"";
      const std::int32_t token = allowed[rng() % allowed.size()];
      ASSERT_TRUE(matcher.accept_token(token));
      history += vocabulary.bytes(token);
    }
    if (matcher.ended()) {
      ++ended;
      EXPECT_TRUE(accepts(tokenized->grammar(), history)) << history;
    }
  }
  EXPECT_GT(ended, 0);
}

TEST(GrammarMatcher, EndOfSequenceOnlyWhereTheOutputIsWhole) {
  const auto tokenized = tokenized_json_like();
  const std::int32_t eos = tokenized->vocabulary().eos_tokens()[0];
  GrammarMatcher matcher(tokenized);
  EXPECT_FALSE(matcher.next_token_mask().test(eos));
  EXPECT_FALSE(matcher.accept_token(eos));
  ASSERT_TRUE(matcher.accept_bytes("{\"a\":1"));
  EXPECT_FALSE(matcher.next_token_mask().test(eos));
  ASSERT_TRUE(matcher.accept_bytes("}"));
  const TokenMask& mask = matcher.next_token_mask();
  EXPECT_TRUE(mask.test(eos));
  EXPECT_EQ(mask.count(), 1);
  EXPECT_TRUE(matcher.accept_token(eos));
  EXPECT_TRUE(matcher.ended());
  EXPECT_EQ(matcher.next_token_mask().count(), 0);
}

}  // namespace
}  // namespace tern::engine::grammar
