#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/kv_cache.h"

namespace tern::engine {

enum class SequenceState { waiting, running, finished };

// What the scheduler knows of one sequence: its tokens, how many of them have KV in the cache,
// and its blocks. The engine owns it (next to the request's sampler and handle) and keeps it
// alive until Scheduler::finish().
struct Sequence {
  Sequence() = default;
  Sequence(std::uint64_t sequence_id, std::vector<std::int32_t> prompt)
      : id(sequence_id),
        tokens(std::move(prompt)),
        num_prompt_tokens(static_cast<std::int32_t>(tokens.size())) {}

  std::uint64_t id = 0;
  std::vector<std::int32_t> tokens;  // the prompt, then every generated token
  std::int32_t num_prompt_tokens = 0;
  std::int32_t num_computed_tokens = 0;       // leading tokens whose KV is in the cache
  std::int32_t num_cached_prompt_tokens = 0;  // found in the prefix cache at first admission
  std::int32_t num_preemptions = 0;
  SequenceState state = SequenceState::waiting;
  // Its consumer is behind: the scheduler skips it (keeping its blocks) until this clears.
  bool paused = false;
  BlockTable blocks;

  std::int32_t num_tokens() const { return static_cast<std::int32_t>(tokens.size()); }
  std::int32_t num_generated_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const std::int32_t> generated_tokens() const {
    return std::span<const std::int32_t>(tokens).subspan(
        static_cast<std::size_t>(num_prompt_tokens));
  }
};

}  // namespace tern::engine
