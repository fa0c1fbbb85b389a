#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

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

 private:
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

}  // namespace tern::engine
