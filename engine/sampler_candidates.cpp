// Sampling from a device's top candidates of a logits row, bit for bit as the full row would.
//
// Why it can be exact: everything the full-row sampler does to a token outside the candidates
// is decided by comparisons that the last candidate bounds (a logit outside is at most the last
// candidate's, so after the temperature it is at most that candidate's scaled value, and its
// weight at most that candidate's weight). Scaling can merge distinct logits into equal scaled
// values, which the full row orders by id; so only the candidates that provably come before
// every token outside (count_ahead_of_the_rest, the "safe" head) may be kept by a cut.
// The one row-wide quantity, top-p's normaliser, comes from the device with an error bound,
// and the cut is taken only when it is the same anywhere within that bound.

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/sampler.h"
#include "engine/sampler_order.h"

namespace tern::engine {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

bool well_formed(const LogitCandidates& row) {
  const std::size_t count = row.values.size();
  if (count == 0 || count != row.ids.size() || row.vocab <= 0 ||
      count > static_cast<std::size_t>(row.vocab)) {
    return false;
  }
  return std::all_of(row.ids.begin(), row.ids.end(),
                     [&](std::int32_t id) { return id >= 0 && id < row.vocab; });
}

// Descending, equal values by lower id, no id twice in a row of equals: what the proofs below
// lean on. (NaN is ruled out before this is asked.)
bool in_device_order(const LogitCandidates& row) {
  for (std::size_t i = 1; i < row.values.size(); ++i) {
    const float before = row.values[i - 1];
    const float value = row.values[i];
    if (value > before || (value == before && row.ids[i] <= row.ids[i - 1])) return false;
  }
  return true;
}

// Whether the candidates hold every logit of the row other than -inf.
bool covers_the_row(const LogitCandidates& row) {
  return row.values.size() == static_cast<std::size_t>(row.vocab) ||
         row.values.back() == kMinusInfinity;
}

// Weights more than this (relative) below min-p stay below it for every logit at most as large:
// std::exp on floats is within an ulp or so of exact, not guaranteed monotone to the last bit.
constexpr double kMinPMargin = 0x1.0p-20;

// How many of the candidates (`scaled`: each value times the inverse temperature, in the row's
// order) come before every token outside them in the sampler's order, scaled value then id.
// A token outside has a logit at most the last candidate's, so it scales at most to the last
// one's value; it may tie there, and a tie goes by id, which for a token outside is unknown,
// unless two things hold: no smaller logit scales to that value, and the candidates that scale
// to it all have the last logit itself. Then a token outside that ties has the last logit
// too, and the device's order gave it a higher id than every candidate with that logit.
std::size_t count_ahead_of_the_rest(const LogitCandidates& row, const SamplerScratch& scaled,
                                    float inverse_temperature) {
  const float last_logit = row.values.back();
  const float last_scaled = scaled.back().first;
  bool ties_have_the_last_logit =
      std::nextafter(last_logit, kMinusInfinity) * inverse_temperature < last_scaled;
  std::size_t above = 0;
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    if (scaled[i].first > last_scaled) {
      ++above;
    } else if (row.values[i] != last_logit) {
      ties_have_the_last_logit = false;
    }
  }
  return ties_have_the_last_logit ? scaled.size() : above;
}

}  // namespace

std::optional<std::int32_t> Sampler::sample(const LogitCandidates& row,
                                            SamplerScratch& candidates) {
  if (!well_formed(row)) return std::nullopt;
  // NaN ranks first: argmax and the softmax treat a NaN in the row in ways the candidates
  // cannot mirror.
  if (std::any_of(row.values.begin(), row.values.end(), [](float v) { return std::isnan(v); })) {
    return std::nullopt;
  }
  if (!in_device_order(row)) return std::nullopt;
  if (params_.is_greedy()) return row.ids[0];  // the largest value, lowest id: argmax
  if (!covers_the_row(row)) return sample_incomplete(row, candidates);

  // The whole row (but -inf) is here: give the full-row sampler the very list it would build.
  const float inverse_temperature = 1.0f / params_.temperature;
  candidates.clear();
  for (std::size_t i = 0; i < row.values.size(); ++i) {
    if (row.values[i] == kMinusInfinity) continue;
    candidates.emplace_back(row.values[i] * inverse_temperature, row.ids[i]);
  }
  if (candidates.empty()) return 0;  // every logit -inf: argmax's lowest id
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  return sample_scaled(candidates);
}

std::optional<std::int32_t> Sampler::sample_incomplete(const LogitCandidates& row,
                                                       SamplerScratch& candidates) {
  // Here the row holds more tokens than the candidates, none of them NaN, all of the
  // candidates above -inf.
  const float inverse_temperature = 1.0f / params_.temperature;
  candidates.clear();
  for (std::size_t i = 0; i < row.values.size(); ++i) {
    candidates.emplace_back(row.values[i] * inverse_temperature, row.ids[i]);
  }
  // The best logit scaled is the row's scaled maximum. An infinite one makes NaN weights.
  const float max_scaled = candidates.front().first;
  if (!std::isfinite(max_scaled)) return std::nullopt;
  const float last_scaled = candidates.back().first;
  const std::size_t safe = count_ahead_of_the_rest(row, candidates, inverse_temperature);
  std::sort(candidates.begin(), candidates.end(), ranks_before);

  if (params_.top_k > 0) {
    // The full row keeps its top_k best, all in the safe head: the same list, best first.
    if (static_cast<std::size_t>(params_.top_k) > safe) return std::nullopt;
    candidates.resize(static_cast<std::size_t>(params_.top_k));
    return cut_and_draw(candidates, true);
  }
  if (params_.min_p > 0.0f) {
    // Every token outside weighs at most what the last candidate weighs: when that is below
    // min-p, the tokens min-p keeps are candidates, and the full row's list is these, in id order.
    const float last_weight = std::exp(last_scaled - max_scaled);
    if (params_.min_p > 1.0f ||
        !(static_cast<double>(last_weight) * (1 + kMinPMargin) < params_.min_p)) {
      return std::nullopt;
    }
    std::erase_if(candidates,
                  [&](const auto& c) { return std::exp(c.first - max_scaled) < params_.min_p; });
    std::sort(candidates.begin(), candidates.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    return cut_and_draw(candidates, false);
  }
  if (params_.top_p < 1.0f) {
    for (auto& candidate : candidates) candidate.first = std::exp(candidate.first - max_scaled);
    return nucleus_of_full_mass(row, candidates, safe);
  }
  return std::nullopt;  // the whole distribution
}

// Top-p alone: the full row sums every weight in id order (double), then walks the sorted head
// until the running sum reaches top_p times that. `weights` is the candidates' sorted head.
std::optional<std::int32_t> Sampler::nucleus_of_full_mass(const LogitCandidates& row,
                                                          SamplerScratch& weights,
                                                          std::size_t safe) {
  const double mass = row.scaled_mass;
  // Twice the stated bound, and never below a few double ulps: lo and hi are products rounded
  // once more, and the bound must still hold around them.
  const double error = 2 * std::max(row.scaled_mass_relative_error, 0x1.0p-50);
  if (!std::isfinite(mass) || !(mass >= 1) || !(error < 0.5)) return std::nullopt;
  // Rounding is monotone, so the full row's target, top_p * S rounded, lies within these.
  const double top_p = static_cast<double>(params_.top_p);
  const double target_low = top_p * (mass * (1 - error));
  const double target_high = top_p * (mass * (1 + error));
  double cumulative = 0;
  std::size_t cut = 0;
  while (cut < safe && cumulative < target_high) {
    // A sum below the lowest target here but not below the true one would end the walk sooner.
    if (!(cumulative < target_low)) return std::nullopt;
    cumulative += weights[cut++].first;
  }
  if (!(cumulative >= target_high)) return std::nullopt;  // the nucleus may run past the head
  weights.resize(cut);
  double total = 0;
  for (const auto& weight : weights) total += weight.first;
  return draw(weights, total);
}

}  // namespace tern::engine
