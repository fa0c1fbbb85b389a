// Every grammar's step is bounded in work and memory, whatever its shape: an ambiguous grammar
// whose parse-stack sets grow exponentially with the output fails its matcher at the budget
// (the engine then ends that request), and the matcher's automaton never holds more than its
// memory limit. Counts, never times.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_grammar.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/request.h"

namespace tern::engine::grammar {
namespace {

// root ::= r0, r_i ::= r_{i+1} r_{i+1} | "x" for i < n, r_n ::= "x": a kilobyte or so of GBNF
// whose sentences are x^1..x^(2^n), each read in exponentially many ways.
std::string doubling_grammar(int n) {
  std::string text = "root ::= r0\n";
  for (int i = 0; i < n; ++i) {
    text += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " r" +
            std::to_string(i + 1) + " | \"x\"\n";
  }
  text += "r" + std::to_string(n) + " ::= \"x\"\n";
  return text;
}

// Every byte, a few runs of "x" and "ab", and the end.
std::shared_ptr<const TokenVocabulary> small_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"xx", "xxxx", "xxxxxxxx", "xxxxxxxxxxxxxxxx", "ab", "ba", "aab", "{\"",
                            "\":", "\",\"", "true", "12", "]}"}) {
    tokens.emplace_back(piece);
  }
  const auto eos = static_cast<std::int32_t>(tokens.size());
  tokens.emplace_back();
  return std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{eos});
}

std::shared_ptr<const TokenizedGrammar> tokenized(const std::string& gbnf,
                                                  const std::shared_ptr<const TokenVocabulary>& v) {
  auto grammar = compile_gbnf(gbnf);
  EXPECT_TRUE(grammar.ok()) << grammar.error().message;
  if (!grammar.ok()) return nullptr;
  auto tokens = TokenizedGrammar::create(*grammar, v);
  EXPECT_TRUE(tokens.ok()) << tokens.error().message;
  return tokens.ok() ? *tokens : nullptr;
}

std::vector<std::int32_t> allowed_tokens(const TokenMask& mask) {
  std::vector<std::int32_t> allowed;
  for (std::int32_t token = 0; token < mask.size(); ++token) {
    if (mask.test(token)) allowed.push_back(token);
  }
  return allowed;
}

// The matcher's bounds, whatever happened.
void expect_within(const GrammarMatcher& matcher, const MatcherLimits& limits) {
  EXPECT_LE(matcher.usage().peak_step_work, limits.step_work);
  EXPECT_LE(matcher.usage().peak_memory_bytes, limits.memory_bytes);
  EXPECT_LE(matcher.usage().memory_bytes, limits.memory_bytes);
}

// Writes x until the budget stops the matcher. Without a budget each step costs more than the
// last, past seconds and gigabytes within a few hundred tokens.
TEST(GrammarBudget, TheDoublingGrammarStopsAtTheBudget) {
  const auto vocabulary = small_vocabulary();
  const MatcherLimits limits{kDefaultGrammarStepWork, kGrammarMatcherMemoryBytes};
  for (const int n : {25, 30, 3000}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto grammar = tokenized(doubling_grammar(n), vocabulary);
    ASSERT_NE(grammar, nullptr);
    GrammarMatcher matcher(grammar, limits);
    const std::int32_t x = 'x';
    int written = 0;
    for (; written < 4096 && !matcher.over_budget(); ++written) {
      const TokenMask& mask = matcher.next_token_mask();
      if (matcher.over_budget()) break;
      ASSERT_TRUE(mask.test(x)) << "after " << written << " x";
      // The longest run of x allowed (ids 259 down to 256: 16, 8, 4 and 2 x), so that the
      // stacks grow as fast as a model could make them.
      std::int32_t token = x;
      for (std::int32_t run = 259; run >= 256; --run) {
        if (!mask.test(run)) continue;
        token = run;
        break;
      }
      if (!matcher.accept_token(token)) break;
    }
    EXPECT_TRUE(matcher.over_budget()) << "wrote " << written << " tokens";
    expect_within(matcher, limits);
    // Over budget, the matcher allows nothing and takes nothing.
    EXPECT_EQ(matcher.next_token_mask().count(), 0);
    EXPECT_FALSE(matcher.accept_token(x));
    EXPECT_FALSE(matcher.can_end());
  }
}

// Random small grammars (alternatives of sequences of rules and literals, some ambiguous), on
// random walks: each stays within the budget and the memory limit, and while it does, its masks
// are those of a matcher without limits.
TEST(GrammarBudget, RandomSmallGrammarsStayWithinTheBudget) {
  const auto vocabulary = small_vocabulary();
  const MatcherLimits limits{200'000, 1 << 20};
  std::mt19937 rng(28);
  int run = 0;
  int stopped = 0;
  for (int g = 0; g < 1000; ++g) {
    const int rules = 2 + static_cast<int>(rng() % 5);
    std::string text;
    for (int r = 0; r < rules; ++r) {
      text += (r == 0 ? std::string("root") : "r" + std::to_string(r)) + " ::= ";
      const int alternatives = 1 + static_cast<int>(rng() % 3);
      for (int a = 0; a < alternatives; ++a) {
        if (a > 0) text += " | ";
        const int items = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < items; ++i) {
          const int pick = static_cast<int>(rng() % 6);
          if (pick < 3) {
            text += "r" + std::to_string(1 + rng() % static_cast<unsigned>(rules - 1)) + " ";
          } else {
            text += std::string(pick == 3 ? "\"a\"" : pick == 4 ? "\"b\"" : "\"ab\"") + " ";
          }
          if (rng() % 5 == 0) text += rng() % 2 == 0 ? "* " : "? ";
        }
      }
      text += "\n";
    }
    auto grammar = compile_gbnf(text);
    if (!grammar.ok()) continue;  // left-recursive, or a rule never reached
    auto tokens = TokenizedGrammar::create(*grammar, vocabulary);
    if (!tokens.ok()) continue;
    ++run;
    GrammarMatcher bounded(*tokens, limits);
    GrammarMatcher unbounded(*tokens);
    for (int step = 0; step < 48 && !bounded.ended(); ++step) {
      const TokenMask& mask = bounded.next_token_mask();
      if (bounded.over_budget()) break;
      const std::vector<std::int32_t> allowed = allowed_tokens(mask);
      ASSERT_EQ(allowed, allowed_tokens(unbounded.next_token_mask())) << text << "step " << step;
      if (allowed.empty()) break;
      const std::int32_t token = allowed[rng() % allowed.size()];
      ASSERT_TRUE(bounded.accept_token(token) || bounded.over_budget()) << text;
      ASSERT_TRUE(unbounded.accept_token(token)) << text;
    }
    stopped += bounded.over_budget() ? 1 : 0;
    expect_within(bounded, limits);
  }
  EXPECT_GT(run, 150);
  EXPECT_GT(stopped, 0);  // some of them are exponential
  std::printf("%d grammars run, %d stopped at the budget\n", run, stopped);
}

// A memory limit far below what a walk visits: the matcher keeps only its current stacks each
// time it passes half, and its masks stay those of a matcher without limits.
TEST(GrammarBudget, DroppingTheAutomatonKeepsTheMasks) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* piece :
       {"{\"", "\":", "\",\"", "true", "null", "12", "ab", "\\\"", "]}", "[{"}) {
    tokens.emplace_back(piece);
  }
  const auto eos = static_cast<std::int32_t>(tokens.size());
  tokens.emplace_back();
  auto vocabulary =
      std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{eos});
  auto grammar = compile_json_schema(
      R"({"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"},"maxItems":3},
          "b":{"type":"string","maxLength":6},"c":{"type":"integer"}}})");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  auto tokenized = TokenizedGrammar::create(*grammar, vocabulary);
  ASSERT_TRUE(tokenized.ok()) << tokenized.error().message;
  MatcherLimits limits;
  limits.memory_bytes = 64 << 10;
  std::int64_t compactions = 0;
  for (std::uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    GrammarMatcher small(*tokenized, limits);
    GrammarMatcher whole(*tokenized);
    for (int step = 0; step < 80 && !small.ended(); ++step) {
      const std::vector<std::int32_t> allowed = allowed_tokens(small.next_token_mask());
      ASSERT_FALSE(small.over_budget());
      ASSERT_EQ(allowed, allowed_tokens(whole.next_token_mask())) << "seed " << seed;
      ASSERT_FALSE(allowed.empty());
      const std::int32_t token = allowed[rng() % allowed.size()];
      ASSERT_TRUE(small.accept_token(token));
      ASSERT_TRUE(whole.accept_token(token));
      ASSERT_EQ(small.can_end(), whole.can_end());
    }
    EXPECT_LE(small.usage().peak_memory_bytes, limits.memory_bytes);
    compactions += small.usage().compactions;
  }
  EXPECT_GT(compactions, 0);
}

// The start of an output is bounded too: a grammar whose first byte may sit under
// exponentially many stacks fails its matcher before any step.
TEST(GrammarBudget, TheFirstStacksAreBoundedToo) {
  std::string text = "root ::= s0\n";
  constexpr int kLevels = 40;
  for (int i = 0; i < kLevels; ++i) {
    const std::string next = "s" + std::to_string(i + 1);
    text += "s" + std::to_string(i) + " ::= " + next + " \"a\" | " + next + " \"b\"\n";
  }
  text += "s" + std::to_string(kLevels) + " ::= \"x\"\n";
  const auto vocabulary = small_vocabulary();
  const auto grammar = tokenized(text, vocabulary);
  ASSERT_NE(grammar, nullptr);
  const MatcherLimits limits{kDefaultGrammarStepWork, kGrammarMatcherMemoryBytes};
  GrammarMatcher matcher(grammar, limits);
  EXPECT_TRUE(matcher.over_budget());
  EXPECT_EQ(matcher.next_token_mask().count(), 0);
  expect_within(matcher, limits);
}

}  // namespace
}  // namespace tern::engine::grammar
