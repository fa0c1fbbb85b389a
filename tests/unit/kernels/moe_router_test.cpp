#include "kernels/cpu/moe_router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace tern::kernels {
namespace {

struct Routed {
  std::vector<std::int32_t> experts;
  std::vector<float> weights;
};

// Routes one token with scratch full of NaN, so a read of scratch the router did not write first
// shows up in the result.
Routed route(const MoeRouting& routing, const std::vector<float>& logits,
             const std::vector<float>& bias = {}) {
  Routed routed;
  routed.experts.assign(static_cast<std::size_t>(routing.experts_per_token), -1);
  routed.weights.assign(static_cast<std::size_t>(routing.experts_per_token), -1.0f);
  std::vector<float> scratch(moe_router_scratch_floats(routing),
                             std::numeric_limits<float>::quiet_NaN());
  route_token(routing, logits.data(), bias.empty() ? nullptr : bias.data(), routed.experts.data(),
              routed.weights.data(), scratch.data());
  return routed;
}

MoeRouting softmax_routing(int n_experts, int experts_per_token, bool normalize) {
  MoeRouting routing;
  routing.scoring = MoeRouting::Scoring::softmax;
  routing.n_experts = n_experts;
  routing.experts_per_token = experts_per_token;
  routing.normalize_weights = normalize;
  return routing;
}

MoeRouting sigmoid_routing(int n_experts, int experts_per_token, bool normalize, int n_groups = 1,
                           int groups_per_token = 1, float weight_scale = 1.0f) {
  MoeRouting routing;
  routing.scoring = MoeRouting::Scoring::sigmoid;
  routing.n_experts = n_experts;
  routing.experts_per_token = experts_per_token;
  routing.normalize_weights = normalize;
  routing.n_groups = n_groups;
  routing.groups_per_token = groups_per_token;
  routing.weight_scale = weight_scale;
  return routing;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

void expect_weights(const Routed& routed, const std::vector<double>& expected) {
  ASSERT_EQ(routed.weights.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    // Float exponentials and a float result: a few units in the last place.
    EXPECT_NEAR(routed.weights[i], expected[i], 1e-6 * std::abs(expected[i]) + 1e-9) << i;
  }
}

using Experts = std::vector<std::int32_t>;

TEST(MoeRouterSoftmax, TopTwoOfFourWithoutNormalisationKeepsTheProbabilities) {
  const Routed routed = route(softmax_routing(4, 2, false), {1, 3, 2, 0});
  EXPECT_EQ(routed.experts, (Experts{1, 2}));
  const double sum = std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_weights(routed, {std::exp(3.0) / sum, std::exp(2.0) / sum});  // 0.643914, 0.236883
}

TEST(MoeRouterSoftmax, TopTwoOfFourWithNormalisationSumsToOne) {
  const Routed routed = route(softmax_routing(4, 2, true), {1, 3, 2, 0});
  EXPECT_EQ(routed.experts, (Experts{1, 2}));
  expect_weights(routed, {sigmoid(1.0), sigmoid(-1.0)});  // e^3 / (e^3 + e^2) = 0.731059
}

TEST(MoeRouterSoftmax, EqualLogitsInsideTheTopKAreOrderedByIndex) {
  const Routed routed = route(softmax_routing(4, 2, true), {0, 4, -1, 4});
  EXPECT_EQ(routed.experts, (Experts{1, 3}));
  expect_weights(routed, {0.5, 0.5});
}

TEST(MoeRouterSoftmax, EqualLogitsAtTheBoundaryGoToTheLowerIndex) {
  const Routed routed = route(softmax_routing(5, 2, false), {1, 7, 3, 3, 3});
  EXPECT_EQ(routed.experts, (Experts{1, 2}));
  const double sum = std::exp(1.0) + std::exp(7.0) + 3 * std::exp(3.0);
  expect_weights(routed, {std::exp(7.0) / sum, std::exp(3.0) / sum});
}

TEST(MoeRouterSoftmax, EqualLogitsAtTheBoundaryGoToTheLowerIndexWhenTheyComeFirst) {
  const Routed routed = route(softmax_routing(4, 2, true), {3, 0, 7, 3});
  EXPECT_EQ(routed.experts, (Experts{2, 0}));
}

TEST(MoeRouterSoftmax, WeightScaleMultipliesTheNormalisedWeights) {
  MoeRouting routing = softmax_routing(4, 2, true);
  routing.weight_scale = 2.0f;
  const Routed routed = route(routing, {1, 3, 2, 0});
  EXPECT_EQ(routed.experts, (Experts{1, 2}));
  expect_weights(routed, {2 * sigmoid(1.0), 2 * sigmoid(-1.0)});
}

TEST(MoeRouterSoftmax, SelectsEveryExpertWhenKEqualsTheirNumber) {
  const Routed routed = route(softmax_routing(3, 3, false), {0, 2, 1});
  EXPECT_EQ(routed.experts, (Experts{1, 2, 0}));
  const double sum = std::exp(0.0) + std::exp(1.0) + std::exp(2.0);
  expect_weights(routed, {std::exp(2.0) / sum, std::exp(1.0) / sum, 1 / sum});
}

TEST(MoeRouterSoftmax, LargeLogitsDoNotOverflow) {
  const Routed routed = route(softmax_routing(3, 1, false), {1000, 999, -1000});
  EXPECT_EQ(routed.experts, (Experts{0}));
  expect_weights(routed, {1 / (1 + std::exp(-1.0))});
}

TEST(MoeRouterSoftmax, ANaNLogitRanksBelowEveryNumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Routed routed = route(softmax_routing(4, 2, true), {nan, -50, nan, -60});
  EXPECT_EQ(routed.experts, (Experts{1, 3}));
}

TEST(MoeRouterSigmoid, BiasChangesTheSelectionButNotTheWeights) {
  const std::vector<float> logits = {2, 1, 0, -1};
  const Routed unbiased = route(sigmoid_routing(4, 2, false), logits);
  EXPECT_EQ(unbiased.experts, (Experts{0, 1}));
  expect_weights(unbiased, {sigmoid(2), sigmoid(1)});

  // Choices 0.881, 0.731, 0.5, 1.269: expert 3 is chosen first, weighted by its own sigmoid.
  const Routed biased = route(sigmoid_routing(4, 2, false), logits, {0, 0, 0, 1});
  EXPECT_EQ(biased.experts, (Experts{3, 0}));
  expect_weights(biased, {sigmoid(-1), sigmoid(2)});

  const Routed normalised = route(sigmoid_routing(4, 2, true), logits, {0, 0, 0, 1});
  EXPECT_EQ(normalised.experts, (Experts{3, 0}));
  const double sum = sigmoid(-1) + sigmoid(2);
  expect_weights(normalised, {sigmoid(-1) / sum, sigmoid(2) / sum});
}

TEST(MoeRouterSigmoid, WeightScaleAppliesAfterNormalisation) {
  const std::vector<float> logits = {std::log(3.0f), 0, -std::log(3.0f)};  // sigmoids .75 .5 .25
  const Routed normalised = route(sigmoid_routing(3, 2, true, 1, 1, 2.5f), logits);
  EXPECT_EQ(normalised.experts, (Experts{0, 1}));
  expect_weights(normalised, {0.6 * 2.5, 0.4 * 2.5});

  const Routed raw = route(sigmoid_routing(3, 2, false, 1, 1, 2.5f), logits);
  EXPECT_EQ(raw.experts, (Experts{0, 1}));
  expect_weights(raw, {0.75 * 2.5, 0.5 * 2.5});
}

// 8 experts in 4 groups of 2. Sigmoids: group 0 {0.982, 0.018} sums to 1.0, group 1
// {0.731, 0.731} to 1.462, group 2 {0.881, 0.5} to 1.381, group 3 {0.269, 0.119} to 0.388.
// Groups 1 and 2 are kept, so expert 0, the best single score, is not chosen.
TEST(MoeRouterGroups, AnExpertOfALosingGroupIsNotChosenEvenWithTheBestScore) {
  const std::vector<float> logits = {4, -4, 1, 1, 2, 0, -1, -2};
  const Routed grouped = route(sigmoid_routing(8, 2, true, 4, 2), logits);
  EXPECT_EQ(grouped.experts, (Experts{4, 2}));  // 2 and 3 tie: the lower index
  const double sum = sigmoid(2) + sigmoid(1);
  expect_weights(grouped, {sigmoid(2) / sum, sigmoid(1) / sum});

  const Routed ungrouped = route(sigmoid_routing(8, 2, true), logits);
  EXPECT_EQ(ungrouped.experts, (Experts{0, 4}));
}

TEST(MoeRouterGroups, BiasCountsInTheGroupScores) {
  // Without bias group 0 {0.982, 0.119} = 1.101 beats group 1 {0.5, 0.5}; a bias of 0.1 on both
  // of group 1's experts lifts it to 1.2 (and its two equal choices go to the lower index).
  const std::vector<float> logits = {4, -2, 0, 0};
  EXPECT_EQ(route(sigmoid_routing(4, 1, true, 2, 1), logits).experts, (Experts{0}));
  const Routed biased = route(sigmoid_routing(4, 1, true, 2, 1), logits, {0, 0, 0.1f, 0.1f});
  EXPECT_EQ(biased.experts, (Experts{2}));
  expect_weights(biased, {1.0});
}

TEST(MoeRouterGroups, AGroupScoresItsTwoLargestChoicesOnly) {
  // Group 0 {0.731 x4}: two largest 1.462, all four 2.924. Group 1 {0.881, 0.881, ~0, ~0}: two
  // largest 1.762, all four 1.762. Group 1 wins on its top two.
  const std::vector<float> logits = {1, 1, 1, 1, 2, 2, -9, -9};
  const Routed routed = route(sigmoid_routing(8, 2, false, 2, 1), logits);
  EXPECT_EQ(routed.experts, (Experts{4, 5}));
  expect_weights(routed, {sigmoid(2), sigmoid(2)});
}

TEST(MoeRouterGroups, EqualGroupScoresKeepTheLowerGroup) {
  // Groups 1 and 2 hold the same two values in opposite order: equal sums. Group 1 is kept.
  const std::vector<float> logits = {-3, -3, 1, 2, 2, 1, -3, -3};
  const Routed routed = route(sigmoid_routing(8, 1, true, 4, 1), logits);
  EXPECT_EQ(routed.experts, (Experts{3}));
  expect_weights(routed, {1.0});
}

TEST(MoeRouterGroups, AGroupOfOneScoresItsOnlyExpert) {
  // Sigmoids 0.900, 0.100, 0.802, 0.846: with groups of one the best two groups are the best two
  // experts (a "top two" that read the next group's expert would rank group 2 first).
  const std::vector<float> logits = {2.2f, -2.2f, 1.4f, 1.7f};
  const Routed routed = route(sigmoid_routing(4, 2, false, 4, 2), logits);
  EXPECT_EQ(routed.experts, (Experts{0, 3}));
  expect_weights(routed, {sigmoid(2.2f), sigmoid(1.7f)});
}

TEST(MoeRouterGroups, EveryExpertOfTheKeptGroupsCanBeChosen) {
  // 6 experts in 3 groups, 2 kept, 4 chosen. Group scores: 1.122, 1.0 (expert 2's 0.953 and
  // expert 3's 0.047), 1.549: groups 2 and 0 are kept and all four of their experts chosen.
  const std::vector<float> logits = {0, 0.5f, 3, -3, 1, 1.5f};
  const Routed routed = route(sigmoid_routing(6, 4, false, 3, 2), logits);
  EXPECT_EQ(routed.experts, (Experts{5, 4, 1, 0}));
}

MoeRouting valid_grouped() {
  return sigmoid_routing(8, 2, true, 4, 2);
}

void expect_rejected(const MoeRouting& routing, const std::string& field) {
  const std::optional<std::string> message = validate(routing);
  ASSERT_TRUE(message.has_value()) << field;
  EXPECT_NE(message->find(field), std::string::npos) << *message;
}

TEST(MoeRouterValidate, AcceptsTheShippedArchitectures) {
  EXPECT_EQ(validate(softmax_routing(8, 2, true)), std::nullopt);                // Mixtral
  EXPECT_EQ(validate(softmax_routing(128, 8, false)), std::nullopt);             // Qwen3-MoE
  EXPECT_EQ(validate(sigmoid_routing(256, 8, true, 8, 4, 2.5f)), std::nullopt);  // DeepSeek-V3
  EXPECT_EQ(validate(valid_grouped()), std::nullopt);
}

TEST(MoeRouterValidate, NamesTheBadField) {
  MoeRouting routing = valid_grouped();
  routing.n_experts = 0;
  expect_rejected(routing, "n_experts");

  routing = valid_grouped();
  routing.experts_per_token = 0;
  expect_rejected(routing, "experts_per_token");
  routing.experts_per_token = 9;
  expect_rejected(routing, "experts_per_token");

  routing = valid_grouped();
  routing.n_groups = 0;
  expect_rejected(routing, "n_groups");
  routing.n_groups = 3;
  expect_rejected(routing, "n_groups");

  // Group-limited routing is DeepSeek-V3's, with sigmoid scores only.
  routing = valid_grouped();
  routing.scoring = MoeRouting::Scoring::softmax;
  expect_rejected(routing, "n_groups");

  routing = valid_grouped();
  routing.groups_per_token = 0;
  expect_rejected(routing, "groups_per_token");
  routing.groups_per_token = 5;
  expect_rejected(routing, "groups_per_token");

  // Two kept groups of two hold only 4 experts.
  routing = valid_grouped();
  routing.experts_per_token = 5;
  expect_rejected(routing, "groups_per_token");

  routing = valid_grouped();
  routing.weight_scale = std::numeric_limits<float>::infinity();
  expect_rejected(routing, "weight_scale");
}

TEST(MoeRouterScratch, ResultDependsOnlyOnTheInputs) {
  const MoeRouting routing = sigmoid_routing(256, 8, true, 8, 4, 2.5f);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(256), bias(256);
  for (float& v : logits) v = normal(rng);
  for (float& v : bias) v = 0.1f * normal(rng);

  const std::size_t scratch_floats = moe_router_scratch_floats(routing);
  ASSERT_GE(scratch_floats, 256u);
  for (const MoeRouting& r : {routing, softmax_routing(256, 8, true)}) {
    std::vector<Experts> experts;
    std::vector<std::vector<float>> weights;
    for (const float fill : {0.0f, 1e30f, -1e30f, std::numeric_limits<float>::quiet_NaN()}) {
      std::vector<float> scratch(scratch_floats, fill);
      Experts e(8, -1);
      std::vector<float> w(8, -1);
      route_token(r, logits.data(), bias.data(), e.data(), w.data(), scratch.data());
      experts.push_back(e);
      weights.push_back(w);
    }
    for (std::size_t i = 1; i < experts.size(); ++i) {
      EXPECT_EQ(experts[i], experts[0]);
      EXPECT_EQ(weights[i], weights[0]);  // bitwise: same inputs, same arithmetic
    }
  }
}

// A plain reference: every expert sorted by (score descending, index ascending). Selection scores
// are computed in float as the router does, so near ties rank the same; weights in double.
Routed reference(const MoeRouting& routing, const std::vector<float>& logits,
                 const std::vector<float>& bias) {
  const auto n = static_cast<std::size_t>(routing.n_experts);
  std::vector<float> choice(n);
  std::vector<double> weight(n);
  if (routing.scoring == MoeRouting::Scoring::softmax) {
    const double maximum = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (std::size_t e = 0; e < n; ++e) sum += weight[e] = std::exp(logits[e] - maximum);
    for (std::size_t e = 0; e < n; ++e) weight[e] /= sum;
    choice = logits;
  } else {
    for (std::size_t e = 0; e < n; ++e) {
      const float s = 1.0f / (1.0f + std::exp(-logits[e]));
      weight[e] = sigmoid(logits[e]);
      choice[e] = s + (bias.empty() ? 0.0f : bias[e]);
    }
  }
  const std::size_t group_size = n / static_cast<std::size_t>(routing.n_groups);
  std::vector<bool> eligible(n, true);
  if (routing.n_groups > 1) {
    std::vector<float> group_score(static_cast<std::size_t>(routing.n_groups));
    for (std::size_t g = 0; g < group_score.size(); ++g) {
      std::vector<float> members(choice.begin() + g * group_size,
                                 choice.begin() + (g + 1) * group_size);
      std::sort(members.begin(), members.end(), std::greater<>());
      group_score[g] = group_size == 1 ? members[0] : members[0] + members[1];
    }
    std::vector<std::size_t> groups(group_score.size());
    std::iota(groups.begin(), groups.end(), 0u);
    std::stable_sort(groups.begin(), groups.end(),
                     [&](std::size_t a, std::size_t b) { return group_score[a] > group_score[b]; });
    std::vector<bool> kept(group_score.size(), false);
    for (int i = 0; i < routing.groups_per_token; ++i)
      kept[groups[static_cast<std::size_t>(i)]] = true;
    for (std::size_t e = 0; e < n; ++e) eligible[e] = kept[e / group_size];
  }
  std::vector<std::size_t> order;
  for (std::size_t e = 0; e < n; ++e) {
    if (eligible[e]) order.push_back(e);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return choice[a] > choice[b]; });
  order.resize(static_cast<std::size_t>(routing.experts_per_token));
  double sum = 0;
  for (const std::size_t e : order) sum += weight[e];
  Routed routed;
  for (const std::size_t e : order) {
    routed.experts.push_back(static_cast<std::int32_t>(e));
    double w = weight[e];
    if (routing.normalize_weights) w /= sum;
    routed.weights.push_back(static_cast<float>(w * routing.weight_scale));
  }
  return routed;
}

TEST(MoeRouterRandom, MatchesASortingReference) {
  const std::vector<MoeRouting> routings = {
      softmax_routing(8, 2, true),         softmax_routing(60, 4, false),
      softmax_routing(128, 8, true),       sigmoid_routing(256, 8, true, 8, 4, 2.5f),
      sigmoid_routing(64, 6, false, 8, 3), sigmoid_routing(16, 4, true, 16, 5, 1.5f),
      sigmoid_routing(30, 7, true, 3, 1)};
  std::mt19937 rng(3);
  for (const MoeRouting& routing : routings) {
    const auto n = static_cast<std::size_t>(routing.n_experts);
    for (int token = 0; token < 50; ++token) {
      std::normal_distribution<float> normal(0.0f, token % 2 ? 1.0f : 6.0f);
      std::vector<float> logits(n), bias;
      for (float& v : logits) v = normal(rng);
      if (token % 3 && routing.scoring == MoeRouting::Scoring::sigmoid) {
        bias.resize(n);
        for (float& v : bias) v = 0.2f * normal(rng);
      }
      const Routed expected = reference(routing, logits, bias);
      const Routed routed = route(routing, logits, bias);
      ASSERT_EQ(routed.experts, expected.experts) << routing.n_experts << " token " << token;
      for (std::size_t i = 0; i < expected.weights.size(); ++i) {
        // Float exponentials against double: relative 1e-6.
        EXPECT_NEAR(routed.weights[i], expected.weights[i], 1e-6 * expected.weights[i] + 1e-12)
            << routing.n_experts << " token " << token << " slot " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tern::kernels
