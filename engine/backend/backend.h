#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/batch_plan.h"
#include "engine/expected.h"
#include "kernels/kv_type.h"

namespace tern::engine {

// The kernels' own enum, so a backend hands it over as it is.
using KvCacheType = kernels::KvType;

struct KvCacheSpec {
  KvCacheType type = KvCacheType::f16;
  std::int32_t block_size = 16;
  std::int32_t num_blocks = 0;
};

// What runs a model's forward pass on one kind of device. The backend owns the weights as the
// device sees them, the KV memory and every activation buffer; the engine owns the policy
// (which tokens run, which KV blocks they use) and hands it over as a BatchPlan.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual std::int32_t vocab_size() const = 0;
  virtual std::int32_t max_batch_tokens() const = 0;
  // The most sequences one forward pass takes: the scheduler may run no more at once.
  virtual std::int32_t max_sequences() const = 0;

  // Bytes one KV block takes across all layers, to size num_blocks from a memory budget.
  virtual std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const = 0;

  // (Re)allocates the KV pools; every block id in later plans must be below spec.num_blocks.
  virtual Status allocate_kv_cache(const KvCacheSpec& spec) = 0;

  // Copies whole KV blocks, in order, in every layer's pools: copy-on-write after a fork.
  virtual Status copy_kv_blocks(std::span<const BlockCopy> copies) = 0;

  // Runs every layer over the plan's tokens, writing K/V at the plan's positions, and writes
  // one row of vocab_size() logits per sequence that wants them, in plan order.
  virtual Status forward(const BatchPlan& plan, std::span<float> logits) = 0;
};

}  // namespace tern::engine
