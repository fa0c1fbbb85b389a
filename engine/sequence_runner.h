#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"

namespace tern::engine {

// Runs one sequence on a backend: prefill in chunks, then one token at a time. It owns a
// contiguous KV block table for the whole context. The CLI and the reference tests use it; the
// Engine batches many sequences instead.
class SequenceRunner {
 public:
  // Allocates the backend's KV cache for max_context tokens.
  static Expected<SequenceRunner> create(Backend& backend, std::int32_t max_context,
                                         KvCacheType kv_type = KvCacheType::f16,
                                         std::int32_t block_size = 16);

  // Feeds tokens after those already in the sequence; afterwards logits() belong to the last.
  Status append(std::span<const std::int32_t> tokens);
  std::span<const float> logits() const { return logits_; }
  std::int32_t length() const { return length_; }
  std::int32_t max_context() const { return max_context_; }
  void reset() { length_ = 0; }

 private:
  SequenceRunner(Backend& backend, std::int32_t max_context, std::int32_t block_size);

  Backend* backend_;
  std::int32_t max_context_;
  std::int32_t block_size_;
  std::int32_t length_ = 0;
  BatchPlan plan_;
  std::vector<std::int32_t> block_table_;
  std::vector<float> logits_;
};

}  // namespace tern::engine
