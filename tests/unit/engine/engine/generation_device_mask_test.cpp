// A constrained generation on a backend that applies token masks on its device
// (GenerationLimits::token_masks_on_device): which rows may come back as candidates, the mask it
// hands the device, and that the candidates of the masked row give the token the host's masking
// of the whole row gives, with the same random draws. A vocabulary of 130 tokens (not a multiple
// of 64): letters, digits, fillers the grammar never allows, and an end token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/logit_row_normalisers.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kVocab = 130;
constexpr std::int32_t kEos = kVocab - 1;
constexpr float kInf = std::numeric_limits<float>::infinity();

std::shared_ptr<const grammar::TokenizedGrammar> letters_then_a_digit() {
  std::vector<std::string> tokens;
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
  for (char c = '0'; c <= '9'; ++c) tokens.emplace_back(1, c);
  while (static_cast<std::int32_t>(tokens.size()) < kEos) {
    tokens.push_back("#" + std::to_string(tokens.size()));
  }
  tokens.emplace_back();  // the end token: no bytes
  auto vocabulary = std::make_shared<const grammar::TokenVocabulary>(
      std::move(tokens), std::vector<std::int32_t>{kEos});
  auto compiled = grammar::compile_regex("[a-c]{1,4}[0-9]");
  EXPECT_TRUE(compiled.ok());
  return grammar::TokenizedGrammar::create(*compiled, vocabulary).value();
}

Request constrained_request(SamplingParams sampling) {
  Request request;
  request.prompt_ids = {1, 2};
  request.sampling = sampling;
  request.sampling.seed = 77;
  request.stop.max_tokens = 16;
  request.grammar = letters_then_a_digit();
  return request;
}

GenerationLimits limits(bool token_masks_on_device) {
  static const std::vector<std::int32_t> eos = {kEos};
  return GenerationLimits{kVocab, eos, nullptr, token_masks_on_device};
}

// The row's candidates as the device gives them after masking: its 64 best, larger first and
// lower id among equals, and the row's sums.
struct DeviceRow {
  std::vector<float> values;
  std::vector<std::int32_t> ids;
  LogitCandidates candidates;

  DeviceRow(const std::vector<float>& row, float inverse_temperature) {
    std::vector<std::int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kMaxLogitCandidates, order.end(),
                      [&](std::int32_t a, std::int32_t b) {
                        const float x = row[static_cast<std::size_t>(a)];
                        const float y = row[static_cast<std::size_t>(b)];
                        return x > y || (x == y && a < b);
                      });
    for (std::int32_t i = 0; i < kMaxLogitCandidates; ++i) {
      ids.push_back(order[static_cast<std::size_t>(i)]);
      values.push_back(row[static_cast<std::size_t>(ids.back())]);
    }
    candidates.values = values;
    candidates.ids = ids;
    candidates.vocab = kVocab;
    candidates.log_sum_exp = log_sum_exp(row);
    if (inverse_temperature > 0) candidates.scaled_mass = scaled_mass(row, inverse_temperature);
  }
};

std::vector<float> masked(std::vector<float> row, std::span<const std::uint64_t> mask) {
  for (std::int32_t t = 0; t < kVocab; ++t) {
    const auto word = static_cast<std::size_t>(t / 64);
    if (word >= mask.size() || ((mask[word] >> (t % 64)) & 1u) == 0) {
      row[static_cast<std::size_t>(t)] = -kInf;
    }
  }
  return row;
}

TEST(GenerationDeviceMask, ConstrainedRowsAskForCandidatesOnlyWhereTheDeviceMasks) {
  Generation on_device(constrained_request({.temperature = 0.0f}), 0, limits(true));
  EXPECT_EQ(on_device.sample_path(0, kMaxLogitCandidates), SamplePath::kCandidates);
  const std::span<const std::uint64_t> mask = on_device.device_token_mask();
  ASSERT_EQ(mask.size(), 3u);  // 130 tokens
  EXPECT_EQ(mask[0], 0b111u);  // a, b, c
  EXPECT_EQ(mask[1], 0u);
  EXPECT_EQ(mask[2], 0u);

  // Plain sampling too: three tokens allowed, fewer than the candidates, so they hold them all.
  Generation plain(constrained_request({.temperature = 1.0f}), 0, limits(true));
  EXPECT_EQ(plain.sample_path(0, kMaxLogitCandidates), SamplePath::kCandidates);
  // Logprobs are the unmasked row's; penalties need the whole row.
  Generation logprobs(constrained_request({.temperature = 0.0f, .logprobs = true}), 0,
                      limits(true));
  EXPECT_EQ(logprobs.sample_path(0, kMaxLogitCandidates), SamplePath::kFullRow);
  Generation penalised(constrained_request({.temperature = 0.7f, .frequency_penalty = 0.5f}), 0,
                       limits(true));
  EXPECT_EQ(penalised.sample_path(0, kMaxLogitCandidates), SamplePath::kFullRow);

  // A backend that does not mask: whole rows, masked on the host, and no mask to hand over.
  Generation on_host(constrained_request({.temperature = 0.0f}), 0, limits(false));
  EXPECT_EQ(on_host.sample_path(0, kMaxLogitCandidates), SamplePath::kFullRow);
  EXPECT_TRUE(on_host.device_token_mask().empty());
  std::vector<float> row(kVocab, 0.0f);
  const DeviceRow device_row(row, 0);
  SamplerScratch scratch;
  EXPECT_FALSE(on_host.choose(device_row.candidates, scratch, 0).has_value());
}

// Step by step through the grammar, the candidates of the device-masked row give the host path's
// tokens (which masks the raw row itself), for greedy, plain, top-k and top-p sampling.
TEST(GenerationDeviceMask, CandidatesOfTheMaskedRowGiveTheTokensOfTheMaskedWholeRow) {
  const SamplingParams setups[] = {{.temperature = 0.0f},
                                   {.temperature = 1.0f},
                                   {.temperature = 0.8f, .top_k = 2},
                                   {.temperature = 0.7f, .top_p = 0.9f}};
  std::mt19937 random(3);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  for (const SamplingParams& sampling : setups) {
    for (int run = 0; run < 8; ++run) {
      const Request request = constrained_request(sampling);
      Generation host(request, 0, limits(false));
      Generation device(request, 0, limits(true));
      std::vector<float> row(kVocab), scratch_row(kVocab);
      SamplerScratch scratch;
      for (std::int32_t step = 0; step < request.stop.max_tokens; ++step) {
        for (float& v : row) v = logit(random);
        ASSERT_EQ(device.sample_path(step, kMaxLogitCandidates), SamplePath::kCandidates);
        const std::vector<float> device_masked = masked(row, device.device_token_mask());
        const DeviceRow device_row(device_masked, device.inverse_temperature());
        const std::int32_t want = host.choose(row, scratch_row, scratch, step);
        const std::optional<std::int32_t> got = device.choose(device_row.candidates, scratch, step);
        ASSERT_TRUE(got.has_value()) << "step " << step;
        ASSERT_EQ(*got, want) << "step " << step << " temperature " << sampling.temperature;
        RequestEvent host_event, device_event;
        host.describe(want, row, step + 1, host_event);
        ASSERT_TRUE(device.describe(*got, device_row.candidates, step + 1, device_event));
        EXPECT_EQ(host_event.finish_reason, device_event.finish_reason);
        if (host_event.finish_reason) break;
      }
    }
  }
}

// When the masked row has nothing above -inf, the candidates cannot tell what the host would do
// (a dead end, or a choice among -inf logits): the whole row decides.
TEST(GenerationDeviceMask, AMaskedRowOfOnlyMinusInfinityNeedsTheWholeRow) {
  Generation device(constrained_request({.temperature = 0.0f}), 0, limits(true));
  ASSERT_EQ(device.sample_path(0, kMaxLogitCandidates), SamplePath::kCandidates);
  const std::vector<float> row(kVocab, -kInf);
  const DeviceRow device_row(row, 0);
  SamplerScratch scratch;
  EXPECT_FALSE(device.choose(device_row.candidates, scratch, 0).has_value());
}

}  // namespace
}  // namespace tern::engine

namespace tern::engine {
namespace {

// min_tokens holds back the end token, and the grammar allows nothing else once its sentence
// is whole: the sample ends in error, never with a token the grammar refuses.
TEST(GenerationConstrained, AWholeSentenceBeforeMinTokensEndsInErrorNotInABrokenOutput) {
  SamplingParams sampling;
  sampling.temperature = 1.0f;
  Request request = constrained_request(sampling);
  request.stop.min_tokens = 8;
  Generation generation(request, 0, limits(false));
  std::vector<float> row(kVocab, 0.0f);
  std::vector<float> scratch_row(kVocab);
  SamplerScratch scratch;
  std::int32_t step = 0;
  for (const std::int32_t token : {0, 26}) {  // "a1": a whole sentence of [a-c]{1,4}[0-9]
    RequestEvent event;
    generation.describe(token, row, ++step, event);
    ASSERT_FALSE(event.finish_reason.has_value());
  }
  const std::int32_t token = generation.choose(row, scratch_row, scratch, step);
  RequestEvent event;
  generation.describe(token, row, step + 1, event);
  ASSERT_TRUE(event.finish_reason.has_value());
  EXPECT_EQ(*event.finish_reason, FinishReason::error);
}

// A grammar past its step budget allows no token: on the host and on a device that masks, the
// sample ends in an error that names the grammar's field and the budget's key.
TEST(GenerationConstrained, AGrammarPastItsStepBudgetEndsTheSampleInError) {
  for (const bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "device masks" : "host masks");
    Request request = constrained_request({.temperature = 0.0f});
    request.grammar_field = "response_format";
    GenerationLimits tight = limits(on_device);
    tight.grammar_step_work = 10;  // less than the first stacks take
    Generation generation(request, 0, tight);
    std::vector<float> row(kVocab, 0.0f);
    row[0] = 3.0f;  // "a", which the grammar would allow
    std::vector<float> scratch_row(kVocab);
    SamplerScratch scratch;
    if (on_device) {
      ASSERT_EQ(generation.sample_path(0, kMaxLogitCandidates), SamplePath::kCandidates);
      const std::span<const std::uint64_t> mask = generation.device_token_mask();
      EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](std::uint64_t w) { return w == 0; }));
      const DeviceRow device_row(masked(row, mask), 0);
      EXPECT_FALSE(generation.choose(device_row.candidates, scratch, 0).has_value());
    }
    const std::int32_t token = generation.choose(row, scratch_row, scratch, 0);
    RequestEvent event;
    generation.describe(token, row, 1, event);
    ASSERT_TRUE(event.finish_reason.has_value());
    EXPECT_EQ(*event.finish_reason, FinishReason::error);
    EXPECT_NE(event.message.find("the grammar of 'response_format'"), std::string::npos)
        << event.message;
    EXPECT_NE(event.message.find("structured_outputs_max_mask_work"), std::string::npos);
    EXPECT_TRUE(event.text.empty());
  }
}

}  // namespace
}  // namespace tern::engine
