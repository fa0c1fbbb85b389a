#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/batch_plan.h"
#include "engine/expected.h"
#include "kernels/cpu/kv_store.h"

namespace tern::engine::cuda {

// The paged KV cache in device memory: per layer a K pool and a V pool of num_blocks blocks in
// the CPU's block layout (kernels/cpu/kv_store.h), all in one allocation that also holds the
// per-layer pool pointers copy_blocks takes, so a copy-on-write of any number of blocks is one
// launch for every layer.
class DeviceKvCache {
 public:
  DeviceKvCache() = default;

  // Replaces the cache (the old one is freed first, so its memory can be reused).
  Status allocate(DeviceRuntime& runtime, Stream stream, std::int32_t layers,
                  const kernels::KvCacheLayout& layout, std::int32_t num_blocks);
  Status copy_blocks(DeviceRuntime& runtime, std::span<const BlockCopy> copies, Stream stream);

  void* k_pool(std::int32_t layer) const { return pool(layer, 0); }
  void* v_pool(std::int32_t layer) const { return pool(layer, 1); }
  const kernels::KvCacheLayout& layout() const { return layout_; }
  std::int32_t num_blocks() const { return num_blocks_; }
  std::uint64_t bytes() const { return memory_.bytes(); }

 private:
  void* pool(std::int32_t layer, int which) const;

  DeviceAllocation memory_;
  kernels::KvCacheLayout layout_{};
  std::int32_t layers_ = 0;
  std::int32_t num_blocks_ = 0;
  std::uint64_t pool_stride_ = 0;  // bytes from one pool to the next
  std::uint64_t pools_offset_ = 0;
};

}  // namespace tern::engine::cuda
