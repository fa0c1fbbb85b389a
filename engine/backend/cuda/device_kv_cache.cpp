#include "engine/backend/cuda/device_kv_cache.h"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

namespace tern::engine::cuda {
namespace {

constexpr std::uint64_t kAlignment = 256;

std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

Status DeviceKvCache::allocate(DeviceRuntime& runtime, Stream stream, std::int32_t layers,
                               const kernels::KvCacheLayout& layout, std::int32_t num_blocks) {
  memory_ = DeviceAllocation();
  num_blocks_ = 0;
  const std::uint64_t block_bytes = kernels::kv_block_bytes(layout);
  const auto layer_count = static_cast<std::uint64_t>(layers);
  // The pointer table first: [layers] K pools, then [layers] V pools.
  pools_offset_ = aligned(2 * layer_count * sizeof(void*));
  pool_stride_ = aligned(block_bytes * static_cast<std::uint64_t>(num_blocks));
  const std::uint64_t bytes = pools_offset_ + 2 * layer_count * pool_stride_;
  auto memory = DeviceAllocation::create(
      runtime, bytes,
      fmt::format("the KV cache ({} blocks of {} bytes, K and V, in {} layers)", num_blocks,
                  block_bytes, layers));
  if (!memory) return memory.error();
  memory_ = std::move(*memory);
  layout_ = layout;
  layers_ = layers;
  num_blocks_ = num_blocks;

  // Copied before this returns: the host table is gone after it.
  std::vector<void*> pointers(2 * layer_count);
  for (std::int32_t layer = 0; layer < layers; ++layer) {
    pointers[static_cast<std::size_t>(layer)] = k_pool(layer);
    pointers[static_cast<std::size_t>(layers + layer)] = v_pool(layer);
  }
  if (Status copied = runtime.copy_to_device(memory_.get(), pointers.data(),
                                             pointers.size() * sizeof(void*), stream);
      !copied.ok()) {
    return copied;
  }
  // Unwritten positions are never read, but zeros keep a stray read finite.
  if (Status filled =
          runtime.fill(memory_.as<std::byte>() + pools_offset_, 0, bytes - pools_offset_, stream);
      !filled.ok()) {
    return filled;
  }
  return runtime.synchronize(stream);
}

void* DeviceKvCache::pool(std::int32_t layer, int which) const {
  const auto index = static_cast<std::uint64_t>(which) * static_cast<std::uint64_t>(layers_) +
                     static_cast<std::uint64_t>(layer);
  return memory_.as<std::byte>() + pools_offset_ + index * pool_stride_;
}

Status DeviceKvCache::copy_blocks(DeviceRuntime& runtime, std::span<const BlockCopy> copies,
                                  Stream stream) {
  for (const BlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= num_blocks_ || copy.dst < 0 || copy.dst >= num_blocks_) {
      return Error{fmt::format("{} backend: KV block copy {} -> {} outside the pool of {}",
                               runtime.name(), copy.src, copy.dst, num_blocks_)};
    }
  }
  auto* const* k_pools = memory_.as<void*>();
  auto* const* v_pools = k_pools + layers_;
  std::array<kernels::cuda::BlockCopy, kernels::cuda::kMaxBlockCopiesPerLaunch> pairs{};
  std::size_t next = 0;
  while (next < copies.size()) {
    int count = 0;
    for (; next < copies.size() && count < kernels::cuda::kMaxBlockCopiesPerLaunch; ++next) {
      // A block copied onto itself is already there; the kernel refuses such a pair.
      if (copies[next].src == copies[next].dst) continue;
      pairs[static_cast<std::size_t>(count++)] = {copies[next].src, copies[next].dst};
    }
    if (count == 0) continue;
    if (Status launched =
            runtime.launched(runtime.kernels().copy_blocks(
                                 k_pools, v_pools, layers_, kernels::kv_block_bytes(layout_),
                                 num_blocks_, pairs.data(), count, stream.handle),
                             "copy_blocks");
        !launched.ok()) {
      return launched;
    }
  }
  return Status::success();
}

}  // namespace tern::engine::cuda
