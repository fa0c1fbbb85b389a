#pragma once

#include <cstdint>
#include <limits>
#include <span>

namespace tern::engine {

// The most candidates a device keeps per logits row (the top-k kernel's limit).
inline constexpr std::int32_t kMaxLogitCandidates = 64;

// A logits row as a device summarises it, so that most rows never come back whole: its best
// logits with their token ids, and the row-wide sums that the best logits alone cannot give.
struct LogitCandidates {
  // The min(count, vocab) largest logits of the row (after nothing: no penalties, no bias),
  // ordered as the full row's argmax and sort would: descending, equal values by lower id, and
  // NaN above everything (so that one NaN anywhere in the row shows in values[0]).
  std::span<const float> values;
  std::span<const std::int32_t> ids;
  std::int32_t vocab = 0;

  // Only top-p without top_k reads this: sum over the row's logits x other than -inf of
  // exp(x * (1/T) - m * (1/T)), with m the largest logit and T the request's temperature, each
  // product and exponent in float as the sampler forms them (so exp(0) = 1 for the best).
  // Per row AND per temperature: softmax(x / T) has no normaliser derivable from softmax(x).
  double scaled_mass = std::numeric_limits<double>::quiet_NaN();
  // A bound on |scaled_mass - S| / S, where S is the full-row sampler's own double sum of the
  // same float terms in vocabulary order: it covers the device's exp and summation order.
  double scaled_mass_relative_error = 0;

  // Only logprobs read this: log(sum over the row of exp(x - m)) + m, at temperature 1, as
  // log_probability() on the full row forms it (up to the device's rounding).
  float log_sum_exp = std::numeric_limits<float>::quiet_NaN();
};

}  // namespace tern::engine
