#include "engine/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "engine/logit_row_normalisers.h"
#include "engine/sampler_order.h"

namespace tern::engine {

std::int32_t argmax(std::span<const float> logits) {
  // The maximum in sixteen independent lanes (compiled to vector max instructions), then its
  // first position: a single running best put a compare and a load on every element's path,
  // 220 us a 50k row where this takes 35 us. Same answer: the first of equal maxima, NaN never
  // chosen unless it is element 0.
  const std::size_t count = logits.size();
  if (count == 0) return 0;
  const float first = logits[0];
  if (std::isnan(first)) return 0;
  constexpr std::size_t kLanes = 16;
  std::array<float, kLanes> lanes;
  lanes.fill(first);
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) {
      lanes[j] = logits[i + j] > lanes[j] ? logits[i + j] : lanes[j];
    }
  }
  float best = first;
  for (const float lane : lanes) best = lane > best ? lane : best;
  for (; i < count; ++i) best = logits[i] > best ? logits[i] : best;
  for (std::size_t k = 0; k < count; ++k) {
    if (logits[k] == best) return static_cast<std::int32_t>(k);
  }
  return 0;
}

float log_probability(std::span<const float> logits, std::int32_t token,
                      std::span<TokenLogprob> top) {
  const float log_total = log_sum_exp(logits);

  // Insertion into a small sorted array: top_logprobs is at most 20.
  std::size_t filled = 0;
  for (std::size_t i = 0; i < logits.size() && !top.empty(); ++i) {
    const float logit = logits[i];
    if (filled == top.size() && !(logit > top[filled - 1].logprob)) continue;
    std::size_t at = std::min(filled, top.size() - 1);
    while (at > 0 && logit > top[at - 1].logprob) {
      top[at] = top[at - 1];
      --at;
    }
    top[at] = {static_cast<std::int32_t>(i), logit};
    filled = std::min(filled + 1, top.size());
  }
  for (TokenLogprob& entry : top) entry.logprob -= log_total;
  return logits[static_cast<std::size_t>(token)] - log_total;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

// A uniform draw in [0, mass) from 53 random bits: the same on every standard library, unlike
// std::uniform_real_distribution.
std::int32_t Sampler::draw(const SamplerScratch& candidates, double mass) {
  const double uniform = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double remaining = uniform * mass;
  for (const auto& [probability, id] : candidates) {
    remaining -= probability;
    if (remaining < 0) return id;
  }
  return candidates.back().second;
}

std::int32_t Sampler::sample(std::span<const float> logits, SamplerScratch& candidates) {
  if (params_.is_greedy()) return argmax(logits);

  const float inverse_temperature = 1.0f / params_.temperature;
  candidates.clear();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == -std::numeric_limits<float>::infinity()) continue;
    candidates.emplace_back(logits[i] * inverse_temperature, static_cast<std::int32_t>(i));
  }
  if (candidates.empty()) return argmax(logits);
  return sample_scaled(candidates);
}

std::int32_t Sampler::sample_scaled(SamplerScratch& candidates) {
  bool sorted = false;
  if (params_.top_k > 0 && static_cast<std::size_t>(params_.top_k) < candidates.size()) {
    const auto keep = static_cast<std::ptrdiff_t>(params_.top_k);
    std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(),
                      ranks_before);
    candidates.resize(static_cast<std::size_t>(keep));
    sorted = true;
  }
  return cut_and_draw(candidates, sorted);
}

std::int32_t Sampler::cut_and_draw(SamplerScratch& candidates, bool sorted) {
  // Softmax over what is left (unnormalised until the cuts are made).
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const auto& candidate : candidates) max_logit = std::max(max_logit, candidate.first);
  double total = 0;
  for (auto& candidate : candidates) {
    candidate.first = std::exp(candidate.first - max_logit);
    total += candidate.first;
  }
  if (params_.min_p > 0.0f) {
    // The best candidate has weight exp(0) = 1, so min_p is the threshold itself.
    const auto threshold = params_.min_p;
    std::erase_if(candidates, [&](const auto& c) { return c.first < threshold; });
    total = 0;
    for (const auto& candidate : candidates) total += candidate.first;
  }
  if (params_.top_p < 1.0f) {
    // Sort only as much of the head as the nucleus needs: usually a few dozen tokens.
    const double target = static_cast<double>(params_.top_p) * total;
    std::size_t head = sorted ? candidates.size() : std::min<std::size_t>(64, candidates.size());
    for (;;) {
      if (!sorted) {
        std::partial_sort(candidates.begin(),
                          candidates.begin() + static_cast<std::ptrdiff_t>(head), candidates.end(),
                          ranks_before);
      }
      double cumulative = 0;
      std::size_t cut = 0;
      while (cut < head && cumulative < target) cumulative += candidates[cut++].first;
      if (cumulative >= target || head == candidates.size()) {
        candidates.resize(std::max<std::size_t>(cut, 1));
        break;
      }
      head = std::min(head * 4, candidates.size());
    }
    total = 0;
    for (const auto& candidate : candidates) total += candidate.first;
  }
  return draw(candidates, total);
}

}  // namespace tern::engine
