#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling_params.h"
#include "engine/token_counts.h"

namespace tern::engine {

// One sample's logit adjustments before sampling: repetition penalty (HF style, over prompt and
// output tokens), presence and frequency penalties (OpenAI style, over output tokens),
// logit_bias, and tokens that may not be chosen yet (EOS before min_tokens). Its state is sized
// once, for the prompt plus `max_new_tokens`, so apply() and accept() allocate nothing and its
// memory does not grow with the vocabulary.
class LogitsProcessor {
 public:
  LogitsProcessor(const SamplingParams& params, std::int32_t vocab_size,
                  std::span<const std::int32_t> prompt, std::int32_t max_new_tokens);

  // Whether apply() would leave every logit unchanged (with nothing suppressed).
  bool is_identity() const { return !penalties_ && bias_.empty(); }

  void apply(std::span<float> logits, std::span<const std::int32_t> suppressed) const;

  // Records a generated token for the penalties.
  void accept(std::int32_t token);

 private:
  float repetition_penalty_;
  float presence_penalty_;
  float frequency_penalty_;
  bool penalties_;
  std::vector<std::pair<std::int32_t, float>> bias_;
  std::int32_t vocab_size_;
  // Distinct prompt and output tokens, so apply() touches only them, not the whole vocabulary.
  TokenCounts seen_;  // when penalties are on
};

}  // namespace tern::engine
