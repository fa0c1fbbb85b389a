#pragma once

#include <cstdint>

#include "engine/logit_candidates.h"
#include "engine/sampling_params.h"

namespace tern::engine {

enum class SamplePath {
  kFullRow,     // the whole logits row must come back
  kCandidates,  // the device's candidates may do: Sampler::sample(LogitCandidates) says per row
};

// What can be known before the row is seen. kCandidates when, for some rows, the candidates
// provably pick the token the full row would: greedy; top_k up to the candidate count; top-p
// or min-p without top_k (both checked per row, as are ties past the last candidate). Penalties,
// logit_bias, tokens suppressed this step and top_logprobs beyond the candidates change or need the
// whole row; so does plain sampling from the whole distribution. A vocabulary no larger than the
// candidates is always covered. Logprobs of the chosen token also read
// LogitCandidates::log_sum_exp.
SamplePath choose_sample_path(const SamplingParams& params, bool suppressing_tokens,
                              std::int32_t vocab,
                              std::int32_t candidate_count = kMaxLogitCandidates);

}  // namespace tern::engine
