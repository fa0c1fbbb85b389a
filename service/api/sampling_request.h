#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tern::service::api {

// The sampling and stopping fields shared by chat and text completions, as sent. Unset
// optionals mean "the model's default" (config, then generation_config.json, then engine).
struct SamplingRequest {
  std::optional<int> max_tokens;  // max_tokens or max_completion_tokens
  // Set by max_completion_tokens, which wins over max_tokens when both are given (as in OpenAI's
  // and vLLM's APIs), whatever their order in the body.
  bool max_tokens_from_completion_field = false;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int> top_k;  // vLLM extension; -1 or 0 disables
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<std::int64_t> seed;
  int n = 1;
  std::vector<std::string> stop;
  std::vector<std::int32_t> stop_token_ids;
  std::vector<std::pair<std::int32_t, double>> logit_bias;  // token id -> bias in [-100, 100]
  int min_tokens = 0;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
};

// Limits on what a request may ask for, independent of any model.
inline constexpr int kMaxTokensLimit = 1 << 20;
inline constexpr int kMaxChoices = 128;
inline constexpr int kMaxStopSequences = 16;
inline constexpr int kMaxTopLogprobs = 20;
// reasoning_effort's budgets of reasoning tokens ("high" has none).
inline constexpr int kLowReasoningEffortTokens = 1024;
inline constexpr int kMediumReasoningEffortTokens = 8192;

}  // namespace tern::service::api
