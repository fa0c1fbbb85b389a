// The candidate path must pick the full row's token, with the same random draws, whenever it
// picks at all; and the path decision must send what candidates cannot prove to the full row.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/logit_row_normalisers.h"
#include "engine/sample_path.h"
#include "engine/sampler.h"

namespace tern::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// What a device hands back for a row: the kernel's order (NaN first, then descending, equal
// values by lower id), and the masses it sums in its own order.
struct DeviceRow {
  std::vector<float> values;
  std::vector<std::int32_t> ids;
  std::int32_t vocab = 0;
};

DeviceRow top_candidates(const std::vector<float>& logits, std::size_t count) {
  std::vector<std::int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](std::int32_t a, std::int32_t b) {
    const float x = logits[static_cast<std::size_t>(a)];
    const float y = logits[static_cast<std::size_t>(b)];
    if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
    if (x != y && !std::isnan(x)) return x > y;
    return a < b;
  };
  count = std::min(count, logits.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    before);
  DeviceRow row;
  row.vocab = static_cast<std::int32_t>(logits.size());
  for (std::size_t i = 0; i < count; ++i) {
    row.ids.push_back(order[i]);
    row.values.push_back(logits[static_cast<std::size_t>(order[i])]);
  }
  return row;
}

// The scaled mass as a device would sum it: the sampler's float terms, in another order (from
// the end of the vocabulary), so its bits differ from the sampler's own sum.
double device_scaled_mass(const std::vector<float>& logits, float temperature) {
  const float inverse_temperature = 1.0f / temperature;
  float max_scaled = -kInf;
  for (const float x : logits) {
    if (x != -kInf) max_scaled = std::max(max_scaled, x * inverse_temperature);
  }
  double mass = 0;
  for (auto it = logits.rbegin(); it != logits.rend(); ++it) {
    if (*it != -kInf) mass += std::exp(*it * inverse_temperature - max_scaled);
  }
  return mass;
}

LogitCandidates view(const DeviceRow& row, double mass, double relative_error) {
  LogitCandidates candidates;
  candidates.values = row.values;
  candidates.ids = row.ids;
  candidates.vocab = row.vocab;
  candidates.scaled_mass = mass;
  candidates.scaled_mass_relative_error = relative_error;
  return candidates;
}

enum class Shape {
  kGaussian,
  kQuantised,
  kAdjacentFloats,  // logits a few ulps apart: the temperature merges some of them
  kSpiky,
  kMostlyMinusInfinity,
  kWithNaN,
  kWithInfinity
};

std::vector<float> random_row(std::mt19937_64& rng, std::int32_t vocab, Shape shape) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> row(static_cast<std::size_t>(vocab));
  for (float& x : row) {
    x = normal(rng);
    if (shape == Shape::kQuantised) x = std::round(x * 2) / 2;  // many ties
    // About 200 of them, 5 to a float, so that the best 64 span a dozen floats.
    if (shape == Shape::kAdjacentFloats && unit(rng) * static_cast<float>(vocab) < 200.0f) {
      x = 2.0f;
      for (int ulps = static_cast<int>(unit(rng) * 40); ulps > 0; --ulps) {
        x = std::nextafter(x, 0.0f);
      }
    }
    if (unit(rng) < 0.05f) x = -kInf;
    if (shape == Shape::kMostlyMinusInfinity && unit(rng) < 0.98f) x = -kInf;
  }
  std::uniform_int_distribution<std::int32_t> any(0, vocab - 1);
  if (shape == Shape::kSpiky) {
    for (int i = 0; i < 3; ++i) row[static_cast<std::size_t>(any(rng))] = 14.0f + normal(rng);
  }
  if (shape == Shape::kWithNaN) row[static_cast<std::size_t>(any(rng))] = std::nanf("");
  if (shape == Shape::kWithInfinity) row[static_cast<std::size_t>(any(rng))] = kInf;
  return row;
}

struct Tally {
  int candidates = 0;
  int full_row = 0;
};

TEST(SamplerCandidatesTest, CandidatesPickTheFullRowsTokenWithTheSameDraws) {
  const std::vector<std::int32_t> vocabs = {1, 50, 1000, 32000};
  const std::vector<Shape> shapes = {
      Shape::kGaussian,    Shape::kQuantised,           Shape::kAdjacentFloats,
      Shape::kSpiky,       Shape::kMostlyMinusInfinity, Shape::kWithNaN,
      Shape::kWithInfinity};
  const std::vector<float> temperatures = {0.0f, 0.5f, 1.0f, 1.7f};
  const std::vector<std::int32_t> top_ks = {0, 1, 5, 40, 63, 64, 65};
  const std::vector<float> top_ps = {0.1f, 0.5f, 0.8f, 0.95f, 1.0f};
  const std::vector<float> min_ps = {0.0f, 0.05f, 0.3f};
  // A GPU's sum: expf within a couple of ulps and another order; claimed as 1e-6 here and
  // perturbed by up to that much, to exercise the margin rather than exact bits.
  constexpr double kDeviceError = 1e-6;

  std::mt19937_64 rng(2026);
  std::map<std::string, Tally> tally;
  SamplerScratch full_scratch;
  SamplerScratch candidate_scratch;
  std::uint64_t seed = 0;
  for (const std::int32_t vocab : vocabs) {
    for (const Shape shape : shapes) {
      const std::vector<float> logits = random_row(rng, vocab, shape);
      const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
      for (const float temperature : temperatures) {
        const double exact_order_mass =
            temperature > 0 ? device_scaled_mass(logits, temperature) : 1.0;
        std::uniform_real_distribution<double> jitter(-kDeviceError, kDeviceError);
        const double mass = exact_order_mass * (1 + jitter(rng));
        for (const std::int32_t top_k : top_ks) {
          for (const float top_p : top_ps) {
            for (const float min_p : min_ps) {
              const SamplingParams params{.temperature = temperature,
                                          .top_k = top_k,
                                          .top_p = top_p,
                                          .min_p = min_p,
                                          .seed = ++seed};
              Sampler full(params);
              Sampler from_candidates(params);
              const std::int32_t expected = full.sample(logits, full_scratch);
              const auto token =
                  from_candidates.sample(view(device, mass, 2 * kDeviceError), candidate_scratch);
              const std::string what = "vocab " + std::to_string(vocab) + " shape " +
                                       std::to_string(static_cast<int>(shape)) + " T " +
                                       std::to_string(temperature) + " top_k " +
                                       std::to_string(top_k) + " top_p " + std::to_string(top_p) +
                                       " min_p " + std::to_string(min_p);
              const std::string kind = params.is_greedy() ? "greedy"
                                       : top_k > 0        ? "top_k"
                                       : min_p > 0        ? "min_p"
                                       : top_p < 1        ? "top_p"
                                                          : "plain";
              auto& counts = tally[kind + (vocab <= kMaxLogitCandidates ? " small" : " large")];
              // The sampler is checked on every row; the engine asks it only where the
              // decision allows, which is what the tally counts.
              const bool asked =
                  choose_sample_path(params, false, vocab) == SamplePath::kCandidates;
              if (!token) {
                ++counts.full_row;
                EXPECT_EQ(from_candidates.random_stream(), Sampler(params).random_stream()) << what;
                continue;
              }
              ++(asked ? counts.candidates : counts.full_row);
              ASSERT_EQ(*token, expected) << what;
              ASSERT_EQ(from_candidates.random_stream(), full.random_stream()) << what;
            }
          }
        }
      }
    }
  }
  for (const auto& [kind, counts] : tally) {
    std::printf("%-14s candidates %5d  full row %5d\n", kind.c_str(), counts.candidates,
                counts.full_row);
  }
  // Not vacuous: each kind the decision admits is taken on some rows.
  for (const char* kind :
       {"greedy large", "top_k large", "min_p large", "top_p large", "greedy small", "top_k small",
        "min_p small", "top_p small", "plain small"}) {
    EXPECT_GT(tally[kind].candidates, 0) << kind;
  }
}

// Top-p's cut compares a running sum with top_p times the full row's mass. Here top_p is set so
// that the target falls on (or one float either side of) a running sum of the candidates: the
// candidates must decline whenever the device's mass, within its stated error, could move the cut.
TEST(SamplerCandidatesTest, TopPOnTheBoundaryDeclinesOrAgrees) {
  std::mt19937_64 rng(7);
  SamplerScratch scratch;
  int agreed = 0;
  int declined = 0;
  std::uint64_t seed = 0;
  for (const std::int32_t vocab : {1000, 32000}) {
    for (int trial = 0; trial < 8; ++trial) {
      const std::vector<float> logits = random_row(rng, vocab, Shape::kSpiky);
      const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
      const double mass = device_scaled_mass(logits, 1.0f);
      // The candidates' weights best first and their running sums, as the sampler forms them.
      std::vector<double> running;
      double sum = 0;
      for (const float value : device.values) {
        sum += std::exp(value - device.values[0]);
        running.push_back(sum);
      }
      for (std::size_t cut = 0; cut < 6; ++cut) {
        const auto at = static_cast<float>(running[cut] / mass);
        for (const float top_p : {std::nextafter(at, 0.0f), at, std::nextafter(at, 2.0f)}) {
          if (!(top_p > 0.0f && top_p < 1.0f)) continue;
          for (const double error : {0.0, 1e-9, 1e-6}) {
            // The device's mass anywhere within its stated error, the ends included.
            for (const double off : {-error, 0.0, error}) {
              const SamplingParams params{.temperature = 1.0f, .top_p = top_p, .seed = ++seed};
              Sampler full(params);
              Sampler from_candidates(params);
              const std::int32_t expected = full.sample(logits);
              const auto token =
                  from_candidates.sample(view(device, mass * (1 + off), error), scratch);
              if (!token) {
                ++declined;
                continue;
              }
              ++agreed;
              ASSERT_EQ(*token, expected) << "vocab " << vocab << " cut " << cut;
              ASSERT_EQ(from_candidates.random_stream(), full.random_stream());
            }
          }
        }
      }
    }
  }
  std::printf("boundary: agreed %d declined %d\n", agreed, declined);
  EXPECT_GT(agreed, 0);
  EXPECT_GT(declined, 0);
}

// The smallest b < a with b and a the same float after dividing by the temperature.
std::pair<float, float> merged_by(float temperature) {
  const float inverse_temperature = 1.0f / temperature;
  float a = 1.0f;
  float b = std::nextafter(a, 0.0f);
  while (b * inverse_temperature != a * inverse_temperature) {
    a = b;
    b = std::nextafter(a, 0.0f);
  }
  return {a, b};
}

// Over many seeds, the candidates either decline or pick the full row's token.
void expect_declines_or_agrees(const std::vector<float>& logits, const DeviceRow& device,
                               SamplingParams params, int seeds) {
  SamplerScratch scratch;
  for (int seed = 0; seed < seeds; ++seed) {
    params.seed = static_cast<std::uint64_t>(seed);
    Sampler full(params);
    Sampler from_candidates(params);
    const std::int32_t expected = full.sample(logits);
    const auto token = from_candidates.sample(view(device, NAN, 0), scratch);
    if (token) {
      ASSERT_EQ(*token, expected) << "seed " << seed;
    }
  }
}

// Two logits a > b that the temperature maps to one float: the full row orders them by id, the
// device by value. The candidates must follow the full row.
TEST(SamplerCandidatesTest, LogitsMergedByTheTemperatureGoByIdAsInTheFullRow) {
  const float temperature = 1.7f;
  const auto [a, b] = merged_by(temperature);
  std::vector<float> logits(100, -10.0f);
  logits[0] = b;  // smaller logit, lower id
  logits[1] = a;
  const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
  ASSERT_EQ(device.ids[0], 1);  // the device puts the larger logit first
  // Both weigh 1 and the rest about 0.0028 each: 0.4 of the mass is reached by one token.
  const SamplingParams params{.temperature = temperature, .top_p = 0.4f, .seed = 5};
  Sampler full(params);
  Sampler from_candidates(params);
  SamplerScratch scratch;
  EXPECT_EQ(full.sample(logits), 0);
  EXPECT_EQ(
      from_candidates.sample(view(device, device_scaled_mass(logits, temperature), 1e-9), scratch),
      std::optional<std::int32_t>(0));
}

// Equal logits that run past the last candidate: the device kept the lowest ids among them,
// as the full row's order would, so top_k may reach into them.
TEST(SamplerCandidatesTest, EqualLogitsPastTheLastCandidateKeepTheLowestIds) {
  std::vector<float> logits(1000, 0.0f);
  for (int i = 0; i < 10; ++i) logits[static_cast<std::size_t>(500 + i)] = 5.0f + 0.1f * i;
  const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
  SamplerScratch scratch;
  for (const std::int32_t top_k : {10, 11, 40, 64}) {
    for (const float temperature : {1.0f, 0.5f, 1.7f}) {
      const SamplingParams params{.temperature = temperature, .top_k = top_k, .seed = 3};
      Sampler full(params);
      Sampler from_candidates(params);
      const auto token = from_candidates.sample(view(device, NAN, 0), scratch);
      ASSERT_TRUE(token.has_value()) << top_k;
      EXPECT_EQ(*token, full.sample(logits)) << top_k;
      EXPECT_EQ(from_candidates.random_stream(), full.random_stream());
    }
  }
}

// A smaller logit that the temperature merges with the last candidate's: a token outside may
// then tie with the candidates and come first by id, so top_k into the tie needs the full row.
TEST(SamplerCandidatesTest, TiesMadeByTheTemperaturePastTheLastCandidateNeedTheFullRow) {
  const float temperature = 1.7f;
  const auto [a, b] = merged_by(temperature);
  std::vector<float> logits(1000, b);
  for (int i = 0; i < 63; ++i) logits[static_cast<std::size_t>(500 + i)] = 5.0f + 0.01f * i;
  logits[900] = a;  // the 64th candidate; every b outside ties with it after scaling
  const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
  ASSERT_EQ(device.ids.back(), 900);
  SamplerScratch scratch;
  const SamplingParams within{.temperature = temperature, .top_k = 63, .seed = 1};
  Sampler full(within);
  Sampler from_candidates(within);
  EXPECT_EQ(from_candidates.sample(view(device, NAN, 0), scratch),
            std::optional<std::int32_t>(full.sample(logits)));
  // The full row's top 64 holds id 0 (a b), not the device's id 900.
  Sampler past({.temperature = temperature, .top_k = 64, .seed = 1});
  EXPECT_FALSE(past.sample(view(device, NAN, 0), scratch).has_value());
  expect_declines_or_agrees(logits, device, {.temperature = temperature, .top_k = 64}, 2000);
  // At temperature 1 nothing merges: a is above every b, and the candidates do.
  Sampler unscaled({.temperature = 1.0f, .top_k = 64, .seed = 1});
  EXPECT_TRUE(unscaled.sample(view(device, NAN, 0), scratch).has_value());
}

// The other way a tie reaches past the last candidate: a larger candidate logit merged with the
// last one. Tokens outside with the last logit have higher ids than the last candidate, but
// maybe lower than the merged one, and then they come before it.
TEST(SamplerCandidatesTest, ACandidateMergedWithTheLastNeedsTheFullRowToRankIt) {
  const float temperature = 1.7f;
  const float inverse_temperature = 1.0f / temperature;
  auto [a, b] = merged_by(temperature);
  // b the lowest logit of its merged group, so that no smaller one ties with it.
  while (std::nextafter(b, 0.0f) * inverse_temperature == b * inverse_temperature) {
    b = std::nextafter(b, 0.0f);
  }
  std::vector<float> logits(1000, b);
  for (int i = 0; i < 62; ++i) logits[static_cast<std::size_t>(500 + i)] = 1.5f + 0.01f * i;
  logits[900] = a;
  const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
  ASSERT_EQ(device.ids[62], 900);  // then b at id 0; ids 1.. outside
  ASSERT_EQ(device.ids[63], 0);
  SamplerScratch scratch;
  // The full row's top 64 ends with ids 0 and 1, both b; the device holds 0 and 900.
  Sampler past({.temperature = temperature, .top_k = 64, .seed = 1});
  EXPECT_FALSE(past.sample(view(device, NAN, 0), scratch).has_value());
  expect_declines_or_agrees(logits, device, {.temperature = temperature, .top_k = 64}, 2000);
  const SamplingParams within{.temperature = temperature, .top_k = 62, .seed = 1};
  Sampler full(within);
  Sampler from_candidates(within);
  EXPECT_EQ(from_candidates.sample(view(device, NAN, 0), scratch),
            std::optional<std::int32_t>(full.sample(logits)));
}

// The full row's log-sum-exp, formed as log_probability() forms it.
float full_row_log_sum_exp(const std::vector<float>& logits) {
  return log_sum_exp(logits);
}

// -inf logits have -inf log-probabilities on both paths.
void expect_close(float actual, float expected) {
  if (std::isinf(expected)) {
    EXPECT_EQ(actual, expected);
  } else {
    EXPECT_NEAR(actual, expected, 1e-5);
  }
}

TEST(SamplerCandidatesTest, LogProbabilitiesFromTheCandidatesAreTheFullRows) {
  std::mt19937_64 rng(11);
  for (const std::int32_t vocab : {1, 50, 1000, 32000}) {
    for (const Shape shape : {Shape::kGaussian, Shape::kQuantised, Shape::kSpiky}) {
      const std::vector<float> logits = random_row(rng, vocab, shape);
      const DeviceRow device = top_candidates(logits, kMaxLogitCandidates);
      LogitCandidates candidates = view(device, NAN, 0);
      const auto alternatives = std::min<std::size_t>(kMaxTopLogprobs, device.ids.size());
      for (const std::size_t pick : {std::size_t{0}, device.ids.size() - 1}) {
        const std::int32_t token = device.ids[pick];
        std::vector<TokenLogprob> expected_top(alternatives);
        const float expected = log_probability(logits, token, expected_top);
        // With the full row's own log-sum-exp the values are its bits; a device's differs by
        // its rounding only.
        for (const bool exact : {true, false}) {
          candidates.log_sum_exp = full_row_log_sum_exp(logits);
          if (!exact) candidates.log_sum_exp = std::nextafter(candidates.log_sum_exp, kInf);
          std::vector<TokenLogprob> top(alternatives);
          const auto logprob = log_probability(candidates, token, top);
          ASSERT_TRUE(logprob.has_value());
          for (std::size_t i = 0; i < alternatives; ++i) {
            EXPECT_EQ(top[i].token, expected_top[i].token) << i;
            if (exact) {
              EXPECT_EQ(top[i].logprob, expected_top[i].logprob) << i;
            }
            expect_close(top[i].logprob, expected_top[i].logprob);
          }
          if (exact) {
            EXPECT_EQ(*logprob, expected);
          }
          expect_close(*logprob, expected);
        }
      }
    }
  }
}

TEST(SamplerCandidatesTest, LogProbabilitiesBeyondTheCandidatesNeedTheFullRow) {
  const std::vector<float> logits = {3.0f, 1.0f, 2.0f, 0.5f};
  const DeviceRow device = top_candidates(logits, 2);  // ids 0 and 2
  LogitCandidates candidates = view(device, NAN, 0);
  candidates.log_sum_exp = full_row_log_sum_exp(logits);
  std::vector<TokenLogprob> two(2);
  std::vector<TokenLogprob> three(3);
  EXPECT_TRUE(log_probability(candidates, 2, two).has_value());
  EXPECT_FALSE(log_probability(candidates, 1, two).has_value());    // not a candidate
  EXPECT_FALSE(log_probability(candidates, 0, three).has_value());  // more than the candidates
  candidates.log_sum_exp = NAN;
  EXPECT_FALSE(log_probability(candidates, 0, two).has_value());
}

TEST(SamplerCandidatesTest, MalformedCandidatesAskForTheFullRow) {
  const std::vector<float> values = {3.0f, 2.0f};
  const std::vector<std::int32_t> ids = {0, 7};
  SamplerScratch scratch;
  Sampler sampler({.temperature = 0.0f});
  LogitCandidates row{.values = values, .ids = ids, .vocab = 5};  // id 7 outside
  EXPECT_FALSE(sampler.sample(row, scratch).has_value());
  row.vocab = 8;
  row.ids = std::span<const std::int32_t>(ids).first(1);  // counts differ
  EXPECT_FALSE(sampler.sample(row, scratch).has_value());
  row.values = {};
  row.ids = {};
  EXPECT_FALSE(sampler.sample(row, scratch).has_value());
  // Out of the device's order: ascending values, or equal values with the higher id first.
  const std::vector<float> ascending = {2.0f, 3.0f};
  const std::vector<float> equal = {3.0f, 3.0f};
  const std::vector<std::int32_t> higher_first = {7, 0};
  row.values = ascending;
  row.ids = ids;
  EXPECT_FALSE(sampler.sample(row, scratch).has_value());
  row.values = equal;
  row.ids = higher_first;
  EXPECT_FALSE(sampler.sample(row, scratch).has_value());
  row.ids = ids;
  EXPECT_EQ(sampler.sample(row, scratch), std::optional<std::int32_t>(0));
}

TEST(SamplePathTest, FullRowForWhatCandidatesCannotProve) {
  constexpr std::int32_t kVocab = 32000;
  auto path = [](SamplingParams params, bool suppressing = false, std::int32_t vocab = 32000) {
    return choose_sample_path(params, suppressing, vocab);
  };
  EXPECT_EQ(path({.temperature = 0.0f}), SamplePath::kCandidates);
  EXPECT_EQ(path({.temperature = 0.8f, .top_k = 1}), SamplePath::kCandidates);
  EXPECT_EQ(path({.top_k = 40}), SamplePath::kCandidates);
  EXPECT_EQ(path({.top_k = 64}), SamplePath::kCandidates);
  EXPECT_EQ(path({.top_p = 0.9f}), SamplePath::kCandidates);
  EXPECT_EQ(path({.min_p = 0.1f}), SamplePath::kCandidates);

  EXPECT_EQ(path({.temperature = 0.7f}), SamplePath::kFullRow);  // the whole distribution
  EXPECT_EQ(path({.top_k = 65}), SamplePath::kFullRow);
  EXPECT_EQ(path({.top_k = 65, .top_p = 0.5f}), SamplePath::kFullRow);
  EXPECT_EQ(path({.top_k = -1}), SamplePath::kFullRow);
  EXPECT_EQ(path({.temperature = 0.0f, .repetition_penalty = 1.1f}), SamplePath::kFullRow);
  EXPECT_EQ(path({.top_k = 5, .presence_penalty = 0.5f}), SamplePath::kFullRow);
  EXPECT_EQ(path({.top_p = 0.5f, .frequency_penalty = -0.5f}), SamplePath::kFullRow);
  EXPECT_EQ(path({.temperature = 0.0f, .logit_bias = {{3, 1.0f}}}), SamplePath::kFullRow);
  EXPECT_EQ(path({.temperature = 0.0f}, /*suppressing=*/true), SamplePath::kFullRow);
  EXPECT_EQ(choose_sample_path({.temperature = 0.0f, .logprobs = true, .top_logprobs = 20}, false,
                               kVocab, /*candidate_count=*/16),
            SamplePath::kFullRow);
  EXPECT_EQ(path({.temperature = 0.0f, .logprobs = true, .top_logprobs = 20}),
            SamplePath::kCandidates);
  // A vocabulary the candidates cover: any plain sampling.
  EXPECT_EQ(path({.temperature = 0.7f}, false, 64), SamplePath::kCandidates);
  EXPECT_EQ(path({.top_k = 100}, false, 50), SamplePath::kCandidates);
}

}  // namespace
}  // namespace tern::engine
