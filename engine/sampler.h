#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace tern::engine {

struct SamplingParams {
  float temperature = 1.0f;  // 0 means greedy
  std::int32_t top_k = 0;    // 0 or -1: off
  float top_p = 1.0f;
  float min_p = 0.0f;
  std::uint64_t seed = 0;
};

// Picks the next token from logits. Each request owns one, so its random stream depends only on
// its own seed, never on what else runs.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  std::int32_t sample(std::span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, std::int32_t>> candidates_;  // reused between calls
};

// The index of the largest logit; the lowest index wins a tie.
std::int32_t argmax(std::span<const float> logits);

}  // namespace tern::engine
