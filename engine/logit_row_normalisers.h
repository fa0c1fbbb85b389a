#pragma once

// The two row-wide sums of a logits row that sampling and logprobs take, in the host sampler's
// own arithmetic. A device that summarises rows (kernels/cuda/logit_row_sums.h) is held to these.

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

namespace tern::engine {

// log(sum of exp(x - m)) + m with m the row's largest logit: each difference in float, exp and
// the sum in double in vocabulary order, the log rounded to float before m is added.
// log_probability() divides by it.
inline float log_sum_exp(std::span<const float> logits) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const float logit : logits) max_logit = std::max(max_logit, logit);
  double total = 0;
  for (const float logit : logits) total += std::exp(static_cast<double>(logit - max_logit));
  return static_cast<float>(std::log(total)) + max_logit;
}

// Top-p's normaliser at 1 / inverse_temperature before any cut: the sum, in double in
// vocabulary order, of the float weights std::exp(x * inverse_temperature - max) that the
// sampler forms for every logit but -inf (each product, the maximum and the difference in float).
inline double scaled_mass(std::span<const float> logits, float inverse_temperature) {
  constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
  float max_scaled = kMinusInfinity;
  for (const float logit : logits) {
    if (logit != kMinusInfinity) max_scaled = std::max(max_scaled, logit * inverse_temperature);
  }
  double total = 0;
  for (const float logit : logits) {
    if (logit != kMinusInfinity) total += std::exp(logit * inverse_temperature - max_scaled);
  }
  return total;
}

}  // namespace tern::engine
