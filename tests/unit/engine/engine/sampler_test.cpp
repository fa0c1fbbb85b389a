#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "engine/logits_processor.h"
#include "engine/token_counts.h"

namespace tern::engine {
namespace {

std::vector<float> logits_of(std::initializer_list<float> values) {
  return values;
}

TEST(SamplerTest, GreedyTakesTheLowestIdOfTheLargestLogit) {
  Sampler sampler({.temperature = 0});
  EXPECT_EQ(sampler.sample(logits_of({1, 3, 3, 2})), 1);
  EXPECT_EQ(argmax(logits_of({-1, -2})), 0);
}

// argmax reads a row in vector lanes; it must answer as the one-at-a-time scan does: the first
// of equal maxima, wherever it falls among the lanes and the tail, and NaN only at element 0.
TEST(SamplerTest, ArgmaxAnswersAsAScanForEveryLengthAndPlace) {
  const auto scan = [](const std::vector<float>& row) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < row.size(); ++i) {
      if (row[i] > row[best]) best = i;
    }
    return static_cast<std::int32_t>(best);
  };
  const float nan = std::nanf("");
  for (std::size_t length = 1; length <= 70; ++length) {
    for (std::size_t place = 0; place < length; ++place) {
      std::vector<float> row(length);
      for (std::size_t i = 0; i < length; ++i) row[i] = static_cast<float>((i * 7) % 5) - 3.0f;
      row[place] = 9.0f;
      if (place + 3 < length) row[place + 3] = 9.0f;  // a later tie
      if (place > 0) row[place - 1] = nan;
      if (place + 1 < length) row[place + 1] = -INFINITY;
      ASSERT_EQ(argmax(row), scan(row)) << "length " << length << " place " << place;
    }
  }
  EXPECT_EQ(argmax(logits_of({nan, 1, 2})), 0);
  EXPECT_EQ(argmax(logits_of({-INFINITY, -INFINITY})), 0);
  EXPECT_EQ(argmax(logits_of({-0.0f, 0.0f})), 0);
  EXPECT_EQ(argmax({}), 0);
}

TEST(SamplerTest, TopKOneIsGreedy) {
  Sampler sampler({.temperature = 2.0f, .top_k = 1});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(sampler.sample(logits_of({0, 5, 1})), 1);
}

TEST(SamplerTest, SameSeedSameStreamDifferentSeedDifferentStream) {
  const std::vector<float> logits(64, 0.0f);  // uniform
  auto draws = [&](std::uint64_t seed) {
    Sampler sampler({.temperature = 1.0f, .seed = seed});
    std::vector<std::int32_t> out;
    for (int i = 0; i < 32; ++i) out.push_back(sampler.sample(logits));
    return out;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

TEST(SamplerTest, TopPKeepsTheSmallestNucleus) {
  // Probabilities about 0.64, 0.24, 0.09, 0.03: top_p 0.7 keeps the first two.
  const auto logits = logits_of({3, 2, 1, 0});
  Sampler sampler({.temperature = 1.0f, .top_p = 0.7f, .seed = 1});
  std::map<std::int32_t, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[sampler.sample(logits)];
  EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
  EXPECT_GT(seen[1], 300);
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  const auto logits = logits_of({3, 2, 1, 0});  // relative to the best: 1, 0.37, 0.14, 0.05
  Sampler sampler({.temperature = 1.0f, .min_p = 0.2f, .seed = 3});
  for (int i = 0; i < 2000; ++i) EXPECT_LT(sampler.sample(logits), 2);
}

TEST(SamplerTest, TemperatureSharpens) {
  const auto logits = logits_of({1, 0});
  Sampler cold({.temperature = 0.05f, .seed = 2});
  for (int i = 0; i < 200; ++i) EXPECT_EQ(cold.sample(logits), 0);
}

TEST(SamplerTest, LogProbabilityAndTopAlternatives) {
  const auto logits = logits_of({0, 2, 1, 2});
  std::vector<TokenLogprob> top(3);
  const float logprob = log_probability(logits, 2, top);
  const double total = 1 + 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(logprob, 1 - std::log(total), 1e-5);
  EXPECT_EQ(top[0].token, 1);  // ties: lower id first
  EXPECT_EQ(top[1].token, 3);
  EXPECT_EQ(top[2].token, 2);
  EXPECT_NEAR(top[0].logprob, 2 - std::log(total), 1e-5);
}

TEST(LogitsProcessorTest, PenaltiesBiasAndSuppression) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  params.logit_bias = {{4, 10.0f}};
  const std::vector<std::int32_t> prompt = {0, 1};
  LogitsProcessor processor(params, 6, prompt, 16);
  processor.accept(2);
  processor.accept(2);
  std::vector<float> logits = {4, -4, 4, 4, 0, 1};
  const std::vector<std::int32_t> suppressed = {5};
  processor.apply(logits, suppressed);
  EXPECT_FLOAT_EQ(logits[0], 2.0f);                // prompt token, positive: divided
  EXPECT_FLOAT_EQ(logits[1], -8.0f);               // prompt token, negative: multiplied
  EXPECT_FLOAT_EQ(logits[2], 2.0f - 0.5f - 0.5f);  // output token twice
  EXPECT_FLOAT_EQ(logits[3], 4.0f);                // untouched
  EXPECT_FLOAT_EQ(logits[4], 10.0f);               // biased
  EXPECT_TRUE(std::isinf(logits[5]) && logits[5] < 0);
  EXPECT_TRUE(LogitsProcessor({}, 6, prompt, 16).is_identity());
}

TEST(TokenCountsTest, CountsDistinctTokensInFirstSeenOrderWithinItsSize) {
  TokenCounts counts(4);
  counts.add_prompt_token(151000);
  counts.add_output_token(7);
  counts.add_output_token(151000);
  counts.add_output_token(7);
  counts.add_output_token(99);
  counts.add_output_token(5);
  counts.add_output_token(6);  // a fifth distinct token: more than it was sized for, dropped
  std::vector<std::tuple<std::int32_t, std::int32_t, bool>> seen;
  counts.for_each([&](const TokenCounts::Entry& entry) {
    seen.emplace_back(entry.token, entry.output_count, entry.in_prompt);
  });
  const std::vector<std::tuple<std::int32_t, std::int32_t, bool>> expected = {
      {151000, 1, true}, {7, 2, false}, {99, 1, false}, {5, 1, false}};
  EXPECT_EQ(seen, expected);
}

TEST(LogitsProcessorTest, PenaltiesOverALargeVocabularyTouchOnlyTheSeenTokens) {
  constexpr std::int32_t kVocab = 151936;
  SamplingParams params;
  params.presence_penalty = 1.0f;
  const std::vector<std::int32_t> prompt = {kVocab - 1, 3};
  LogitsProcessor processor(params, kVocab, prompt, 8);
  processor.accept(kVocab - 2);
  processor.accept(kVocab - 2);
  std::vector<float> logits(kVocab, 0.5f);
  processor.apply(logits, {});
  EXPECT_FLOAT_EQ(logits[kVocab - 2], -0.5f);  // generated: presence penalty once
  EXPECT_FLOAT_EQ(logits[kVocab - 1], 0.5f);   // prompt only: presence counts output tokens
  std::size_t changed = 0;
  for (const float logit : logits) changed += logit != 0.5f ? 1 : 0;
  EXPECT_EQ(changed, 1u);
}

}  // namespace
}  // namespace tern::engine
