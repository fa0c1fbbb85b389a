#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace tern::engine {

std::int32_t argmax(std::span<const float> logits) {
  std::int32_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<std::size_t>(best)]) best = static_cast<std::int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

std::int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f || params_.top_k == 1) return argmax(logits);

  candidates_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    candidates_.emplace_back(logits[i] / params_.temperature, static_cast<std::int32_t>(i));
  }
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::size_t keep = candidates_.size();
  if (params_.top_k > 0) keep = std::min(keep, static_cast<std::size_t>(params_.top_k));
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                    candidates_.end(), by_logit);
  candidates_.resize(keep);

  // Softmax over what is left, then min-p and top-p cut the tail.
  const float max_logit = candidates_.front().first;
  double total = 0;
  for (auto& [value, id] : candidates_) {
    value = std::exp(value - max_logit);
    total += value;
  }
  for (auto& candidate : candidates_) candidate.first = static_cast<float>(candidate.first / total);
  const float min_probability = params_.min_p * candidates_.front().first;
  double cumulative = 0;
  std::size_t cut = 0;
  while (cut < candidates_.size()) {
    if (cut > 0 && candidates_[cut].first < min_probability) break;
    cumulative += candidates_[cut].first;
    ++cut;
    if (cumulative >= params_.top_p) break;
  }
  candidates_.resize(cut);

  double mass = 0;
  for (const auto& candidate : candidates_) mass += candidate.first;
  std::uniform_real_distribution<double> uniform(0.0, mass);
  double draw = uniform(rng_);
  for (const auto& [probability, id] : candidates_) {
    draw -= probability;
    if (draw <= 0) return id;
  }
  return candidates_.back().second;
}

}  // namespace tern::engine
