#include "engine/logits_processor.h"

#include <limits>

namespace tern::engine {

LogitsProcessor::LogitsProcessor(const SamplingParams& params, std::int32_t vocab_size,
                                 std::span<const std::int32_t> prompt)
    : repetition_penalty_(params.repetition_penalty),
      presence_penalty_(params.presence_penalty),
      frequency_penalty_(params.frequency_penalty),
      penalties_(params.has_penalties()),
      bias_(params.logit_bias) {
  if (!penalties_) return;
  const auto vocab = static_cast<std::size_t>(vocab_size);
  in_prompt_.assign(vocab, 0);
  output_counts_.assign(vocab, 0);
  // Room for every distinct token up front: accept() must not grow it mid-generation.
  seen_.reserve(vocab);
  for (const std::int32_t token : prompt) {
    if (token < 0 || token >= vocab_size) continue;
    auto& flag = in_prompt_[static_cast<std::size_t>(token)];
    if (flag != 0) continue;
    flag = 1;
    seen_.push_back(token);
  }
}

void LogitsProcessor::remember(std::int32_t token) {
  const auto index = static_cast<std::size_t>(token);
  if (in_prompt_[index] == 0 && output_counts_[index] == 0) seen_.push_back(token);
}

void LogitsProcessor::accept(std::int32_t token) {
  if (!penalties_ || token < 0 || static_cast<std::size_t>(token) >= output_counts_.size()) {
    return;
  }
  remember(token);
  ++output_counts_[static_cast<std::size_t>(token)];
}

void LogitsProcessor::apply(std::span<float> logits,
                            std::span<const std::int32_t> suppressed) const {
  if (penalties_) {
    for (const std::int32_t token : seen_) {
      float& logit = logits[static_cast<std::size_t>(token)];
      const std::int32_t count = output_counts_[static_cast<std::size_t>(token)];
      if (repetition_penalty_ != 1.0f) {
        logit = logit > 0 ? logit / repetition_penalty_ : logit * repetition_penalty_;
      }
      if (count > 0) {
        logit -= presence_penalty_ + frequency_penalty_ * static_cast<float>(count);
      }
    }
  }
  for (const auto& [token, bias] : bias_) logits[static_cast<std::size_t>(token)] += bias;
  for (const std::int32_t token : suppressed) {
    if (token >= 0 && static_cast<std::size_t>(token) < logits.size()) {
      logits[static_cast<std::size_t>(token)] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace tern::engine
