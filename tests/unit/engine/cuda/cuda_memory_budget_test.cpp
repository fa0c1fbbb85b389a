// The CUDA backend sizes its KV pool from gpu_memory_utilization: what that share of the device
// leaves once weights, activations and the decode graphs are in. Measured on the emulated
// device, whose free memory is exactly what was allocated.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/model/model_weights.h"
#include "engine/served_model.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

constexpr std::uint64_t kDeviceBytes = 64ull << 20;
constexpr std::int32_t kBlockSize = 16;

class CudaMemoryBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
    model_path_ = path.string();
    auto weights = load_model(model_path_);
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }

  // The backend on an emulated device of kDeviceBytes, with its runtime kept for inspection.
  Expected<std::unique_ptr<cuda::CudaBackend>> make(double utilization) {
    EmulatedDeviceOptions device;
    device.memory_bytes = kDeviceBytes;
    auto owned = cuda::make_emulated_device_runtime(device);
    runtime_ = owned.get();
    BackendOptions options{.max_sequences = 8, .max_batch_tokens = 64, .max_context = 512};
    CudaOptions cuda_options;
    cuda_options.gpu_memory_utilization = utilization;
    return cuda::CudaBackend::create(std::move(owned), 0, *weights_, options, cuda_options);
  }

  std::string model_path_;
  std::optional<ModelWeights> weights_;
  cuda::DeviceRuntime* runtime_ = nullptr;
  kernels::ThreadPool pool_{1};
};

TEST_F(CudaMemoryBudget, TheKvPoolGetsWhatTheShareLeavesAfterWeightsActivationsAndGraphs) {
  auto backend = make(0.5);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  auto budget = (*backend)->device_kv_budget(KvCacheType::f16, kBlockSize);
  ASSERT_TRUE(budget.ok()) << budget.error().message;
  ASSERT_TRUE(budget->has_value());
  const DeviceMemoryUsage probed = *(*backend)->device_memory();
  EXPECT_EQ(probed.device_total, kDeviceBytes);
  EXPECT_GT(probed.weights, 2u << 20);  // 2.5 MiB of F32 weights
  EXPECT_GT(probed.activations, 0u);
  EXPECT_EQ(probed.graphs, 0u);  // the emulated device's graphs take no device memory
  const std::uint64_t in_use = probed.weights + probed.activations + probed.graphs;
  const std::uint64_t share = kDeviceBytes / 2;
  // The budget is the share less what is in use, less a little slack for the pools' alignment.
  EXPECT_LE(**budget + in_use, share);
  EXPECT_GT(**budget + in_use + 4096, share);

  const std::uint64_t block_bytes = (*backend)->kv_block_bytes(KvCacheType::f16, kBlockSize);
  const auto blocks = static_cast<std::int32_t>(**budget / block_bytes);
  ASSERT_TRUE((*backend)->allocate_kv_cache({KvCacheType::f16, kBlockSize, blocks}).ok());
  const DeviceMemoryUsage allocated = *(*backend)->device_memory();
  EXPECT_GE(allocated.kv_cache, static_cast<std::uint64_t>(blocks) * block_bytes);
  // Everything the backend holds stays within its share of the device.
  const std::uint64_t used = kDeviceBytes - runtime_->memory_info()->free_bytes;
  EXPECT_LE(used, share);
  EXPECT_EQ(used,
            allocated.weights + allocated.activations + allocated.graphs + allocated.kv_cache);
}

TEST_F(CudaMemoryBudget, AShareTooSmallForTheKvCacheFailsWithTheSizes) {
  auto backend = make(0.04);  // 2.6 MB of 64 MiB: the weights alone take 2.6 MB
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  auto budget = (*backend)->device_kv_budget(KvCacheType::f16, kBlockSize);
  ASSERT_FALSE(budget.ok());
  const std::string& message = budget.error().message;
  EXPECT_NE(message.find("cuda-emulated: gpu_memory_utilization 0.04 of device 0's 67108864 "
                         "bytes is 2684354 bytes, and the weights ("),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no room for the KV cache; raise gpu_memory_utilization"),
            std::string::npos)
      << message;
}

ModelSpec served_spec(const std::string& path) {
  ModelSpec spec;
  spec.name = "ts";
  spec.path = path;
  spec.backend = BackendKind::cuda_emulated;
  spec.emulated_device.memory_bytes = kDeviceBytes;
  spec.cuda.gpu_memory_utilization = 0.5;
  spec.max_num_seqs = 4;
  spec.max_num_batched_tokens = 64;
  return spec;
}

// Served: without kv_cache_bytes the pool is the device budget (larger than what four sequences
// at full context need: the rest serves the prefix cache); an explicit kv_cache_bytes wins.
TEST_F(CudaMemoryBudget, AServedModelTakesTheDeviceBudgetUnlessKvCacheBytesIsGiven) {
  ModelSpec spec = served_spec(model_path_);
  auto served = load_served_model(spec, pool_);
  ASSERT_TRUE(served.ok()) << served.error().message;
  const EngineStats stats = (*served)->engine->stats();
  const DeviceMemoryUsage memory = *(*served)->backend->device_memory();
  EXPECT_EQ(stats.kv_cache_bytes, static_cast<std::uint64_t>(stats.kv_blocks) *
                                      (*served)->backend->kv_block_bytes(KvCacheType::f16, 16));
  EXPECT_GE(memory.kv_cache, stats.kv_cache_bytes);
  EXPECT_LE(memory.weights + memory.activations + memory.graphs + memory.kv_cache,
            kDeviceBytes / 2);
  EXPECT_GT(memory.weights + memory.activations + memory.graphs + memory.kv_cache + (1 << 20),
            kDeviceBytes / 2);
  const std::int32_t full_context_blocks = 4 * (512 / 16);
  EXPECT_GT(stats.kv_blocks, full_context_blocks);
  served->reset();

  spec.kv_cache_bytes = 400ull << 10;  // 50 blocks of 8192 bytes (all layers): 800 tokens
  auto explicit_bytes = load_served_model(spec, pool_);
  ASSERT_TRUE(explicit_bytes.ok()) << explicit_bytes.error().message;
  EXPECT_EQ((*explicit_bytes)->engine->stats().kv_blocks, 50);
}

}  // namespace
}  // namespace tern::engine
