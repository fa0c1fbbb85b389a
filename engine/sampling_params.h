#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tern::engine {

inline constexpr std::int32_t kMaxTopLogprobs = 20;

// How the next token is chosen (OpenAI / vLLM semantics). The defaults sample from the model's
// distribution unchanged.
struct SamplingParams {
  float temperature = 1.0f;         // 0 means greedy
  std::int32_t top_k = 0;           // 0 or -1: off
  float top_p = 1.0f;               // in (0, 1]
  float min_p = 0.0f;               // in [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 is off (prompt and output tokens)
  float presence_penalty = 0.0f;    // in [-2, 2] (output tokens)
  float frequency_penalty = 0.0f;   // in [-2, 2] (output tokens)
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // token id -> added to its logit
  std::uint64_t seed = 0;
  bool logprobs = false;          // report the chosen token's log-probability
  std::int32_t top_logprobs = 0;  // and this many alternatives, up to kMaxTopLogprobs

  bool is_greedy() const { return temperature <= 0.0f || top_k == 1; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

}  // namespace tern::engine
