#include "engine/logits_processor.h"

#include <algorithm>
#include <limits>

namespace tern::engine {

LogitsProcessor::LogitsProcessor(const SamplingParams& params, std::int32_t vocab_size,
                                 std::span<const std::int32_t> prompt, std::int32_t max_new_tokens)
    : repetition_penalty_(params.repetition_penalty),
      presence_penalty_(params.presence_penalty),
      frequency_penalty_(params.frequency_penalty),
      penalties_(params.has_penalties()),
      bias_(params.logit_bias),
      vocab_size_(vocab_size) {
  if (!penalties_) return;
  const std::size_t most_distinct =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(vocab_size, 0)),
                            prompt.size() + static_cast<std::size_t>(std::max(max_new_tokens, 0)));
  seen_ = TokenCounts(most_distinct);
  for (const std::int32_t token : prompt) {
    if (token >= 0 && token < vocab_size) seen_.add_prompt_token(token);
  }
}

void LogitsProcessor::accept(std::int32_t token) {
  if (!penalties_ || token < 0 || token >= vocab_size_) return;
  seen_.add_output_token(token);
}

void LogitsProcessor::apply(std::span<float> logits,
                            std::span<const std::int32_t> suppressed) const {
  if (penalties_) {
    seen_.for_each([&](const TokenCounts::Entry& entry) {
      float& logit = logits[static_cast<std::size_t>(entry.token)];
      if (repetition_penalty_ != 1.0f) {
        logit = logit > 0 ? logit / repetition_penalty_ : logit * repetition_penalty_;
      }
      if (entry.output_count > 0) {
        logit -= presence_penalty_ + frequency_penalty_ * static_cast<float>(entry.output_count);
      }
    });
  }
  for (const auto& [token, bias] : bias_) logits[static_cast<std::size_t>(token)] += bias;
  for (const std::int32_t token : suppressed) {
    if (token >= 0 && static_cast<std::size_t>(token) < logits.size()) {
      logits[static_cast<std::size_t>(token)] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace tern::engine
