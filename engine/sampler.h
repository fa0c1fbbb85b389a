#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/logit_candidates.h"
#include "engine/sampling_params.h"

namespace tern::engine {

struct TokenLogprob {
  std::int32_t token = 0;
  float logprob = 0.0f;
};

// Room for one logits row's candidates; the engine keeps one for all its samples, so that no
// sample holds a vocabulary-sized buffer of its own.
using SamplerScratch = std::vector<std::pair<float, std::int32_t>>;

// Picks the next token from logits: greedy, or temperature then top-k, min-p and top-p, drawn
// from the request's own RNG. Each sample owns one, so its random stream depends only on its
// seed, never on what else runs.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // `scratch` allocates nothing once its capacity holds a row.
  std::int32_t sample(std::span<const float> logits, SamplerScratch& scratch);
  std::int32_t sample(std::span<const float> logits) { return sample(logits, own_scratch_); }

  // The token sample() would pick from the full row, with the same random draws, when the
  // device's candidates prove it; otherwise nullopt, with the random stream untouched, and the
  // caller samples the full row. `scratch` needs room for the candidates only.
  std::optional<std::int32_t> sample(const LogitCandidates& row, SamplerScratch& scratch);

  // Where the random stream stands: two samplers that agree here draw alike from now on.
  const std::mt19937_64& random_stream() const { return rng_; }

 private:
  // `candidates`: the row's logits other than -inf, divided by the temperature, in id order.
  std::int32_t sample_scaled(SamplerScratch& candidates);
  // After top-k (`sorted`: best first): min-p, top-p and the draw.
  std::int32_t cut_and_draw(SamplerScratch& candidates, bool sorted);
  std::optional<std::int32_t> sample_incomplete(const LogitCandidates& row,
                                                SamplerScratch& candidates);
  std::optional<std::int32_t> nucleus_of_full_mass(const LogitCandidates& row,
                                                   SamplerScratch& weights, std::size_t safe);
  std::int32_t draw(const SamplerScratch& candidates, double mass);

  SamplingParams params_;
  std::mt19937_64 rng_;
  SamplerScratch own_scratch_;
};

// The index of the largest logit; the lowest index wins a tie.
std::int32_t argmax(std::span<const float> logits);

// log_softmax(logits)[token], and the `top.size()` most likely tokens, best first (ties by id).
float log_probability(std::span<const float> logits, std::int32_t token,
                      std::span<TokenLogprob> top);

// The same from a device's candidates and LogitCandidates::log_sum_exp: the same tokens in the
// same order, the values off only by the device's rounding of log_sum_exp. nullopt, and the
// full row is needed, when `token` is not a candidate, `top` wants more than the candidates,
// or the row has a NaN or no finite log_sum_exp.
std::optional<float> log_probability(const LogitCandidates& row, std::int32_t token,
                                     std::span<TokenLogprob> top);

}  // namespace tern::engine
