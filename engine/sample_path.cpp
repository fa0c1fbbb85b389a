#include "engine/sample_path.h"

namespace tern::engine {

SamplePath choose_sample_path(const SamplingParams& params, bool suppressing_tokens,
                              std::int32_t vocab, std::int32_t candidate_count) {
  if (params.has_penalties() || !params.logit_bias.empty() || suppressing_tokens) {
    return SamplePath::kFullRow;
  }
  if (params.logprobs && params.top_logprobs > candidate_count) return SamplePath::kFullRow;
  if (vocab <= candidate_count || params.is_greedy()) return SamplePath::kCandidates;
  if (params.top_k > 0) {
    return params.top_k <= candidate_count ? SamplePath::kCandidates : SamplePath::kFullRow;
  }
  if (params.top_p < 1.0f || params.min_p > 0.0f) return SamplePath::kCandidates;
  return SamplePath::kFullRow;
}

}  // namespace tern::engine
