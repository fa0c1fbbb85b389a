#pragma once

#include <cstdint>
#include <optional>

namespace tern::engine {

// Per-model defaults from the operator (a model's `sampling:` in the config) for requests that
// leave a sampling field out. Unset falls back to the model's generation_config.json, then the
// engine's default (SamplingParams).
struct SamplingDefaults {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<int> max_tokens;
  std::optional<std::uint64_t> seed;
};

}  // namespace tern::engine
