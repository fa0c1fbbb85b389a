// The reasoning budget: after max_tokens tokens of reasoning the close marker is forced, once,
// and the model's own choices follow.
#include <gtest/gtest.h>

#include <vector>

#include "engine/generation.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kVocab = 8;
constexpr std::int32_t kOpen = 5;
constexpr std::int32_t kClose = 6;
constexpr std::int32_t kNewline = 7;

Request greedy_request(ReasoningBudget budget) {
  Request request;
  request.prompt_ids = {1, 2};
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = 100;
  request.stop.ignore_eos = true;
  request.reasoning_budget = std::move(budget);
  return request;
}

ReasoningBudget budget(std::int32_t max_tokens, bool starts_in_reasoning) {
  return ReasoningBudget{max_tokens, starts_in_reasoning, kOpen, kClose, {kNewline, kClose}};
}

// The model wants `wanted[i]` at step i (a one-hot row); returns what the generation chose.
std::vector<std::int32_t> run(const Request& request, const std::vector<std::int32_t>& wanted) {
  Generation generation(request, 0, GenerationLimits{kVocab, {}, nullptr});
  std::vector<float> logits(kVocab), scratch(kVocab);
  SamplerScratch candidates;
  std::vector<std::int32_t> chosen;
  for (std::size_t step = 0; step < wanted.size(); ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    logits[static_cast<std::size_t>(wanted[step])] = 10.0f;
    const auto generated = static_cast<std::int32_t>(step + 1);
    const std::int32_t token = generation.choose(logits, scratch, candidates, generated);
    RequestEvent event;
    generation.describe(token, logits, generated, event);
    chosen.push_back(token);
  }
  return chosen;
}

TEST(ReasoningBudget, ForcesTheCloseMarkerAfterTheBudget) {
  const Request request = greedy_request(budget(3, true));
  EXPECT_EQ(run(request, {2, 2, 2, 2, 2, 2, 3}),
            (std::vector<std::int32_t>{2, 2, 2, kNewline, kClose, 2, 3}));
}

TEST(ReasoningBudget, CountsFromTheModelsOwnOpenMarker) {
  const Request request = greedy_request(budget(2, false));
  EXPECT_EQ(run(request, {1, kOpen, 2, 2, 2, 2, 3}),
            (std::vector<std::int32_t>{1, kOpen, 2, 2, kNewline, kClose, 3}));
}

TEST(ReasoningBudget, AModelThatClosesInTimeIsLeftAlone) {
  const Request request = greedy_request(budget(3, true));
  EXPECT_EQ(run(request, {2, kClose, 2, 2, 2, 2}),
            (std::vector<std::int32_t>{2, kClose, 2, 2, 2, 2}));
}

TEST(ReasoningBudget, ZeroClosesAtOnce) {
  const Request request = greedy_request(budget(0, true));
  EXPECT_EQ(run(request, {2, 2, 3}), (std::vector<std::int32_t>{kNewline, kClose, 3}));
}

TEST(ReasoningBudget, NoBudgetNeverForces) {
  const Request request = greedy_request(budget(-1, true));
  EXPECT_EQ(run(request, {2, 2, 2, 2}), (std::vector<std::int32_t>{2, 2, 2, 2}));
}

}  // namespace
}  // namespace tern::engine
