// The CUDA backend on the emulated device against the CPU backend: the same plans (prefill
// chunks, decode steps and a copy-on-write fork, mixed in one batch) give the same logits within
// a stated tolerance, for every weight path the tiny models of ../shared exercise.

#include "engine/backend/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/backend/cuda/tensor_parallel_backend.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"
#include "tests/unit/engine/cuda/mixed_steps.h"
#include "tests/unit/engine/cuda/op_trace_comparison.h"

namespace tern::engine {
namespace {

using namespace mixed_steps;

struct Trace {
  std::vector<std::vector<float>> logits;  // per step, rows back to back
  double seconds = 0;
};

Trace run(Backend& backend) {
  Trace trace;
  const auto start = std::chrono::steady_clock::now();
  run_steps(backend, [&](std::vector<float> logits) { trace.logits.push_back(std::move(logits)); });
  trace.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return trace;
}

class CudaBackendLogits : public ::testing::TestWithParam<const char*> {};

// Tolerance: kCudaLogitTolerance (cpu_reference.h), which the graph, tensor-parallel and
// candidate tests hold against the CPU backend too. Integer formats quantize the activations to
// the same Q8 values on both, except Q4_K/Q6_K (not in these files). The measured maximum is
// printed. Past it, the logits may still stand only where the op trace shows the parting to begin
// at a requantization (op_trace_comparison.h: an input that differs in its last bits rounded to
// another Q8_1 quant, as on the H100 and H200 for the Q4_0 file, 6.6e-3), and by no more than
// kRequantizedTolerance, an order of magnitude over that.
constexpr float kTolerance = kCudaLogitTolerance;
constexpr float kRequantizedTolerance = 5e-2f;

TEST_P(CudaBackendLogits, EqualTheCpuBackendOnTheSamePlans) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  TERN_REQUIRE_SHARED(model_path, GetParam());
  SideBySide backends(model_path.string(), kind);
  ASSERT_TRUE(backends.error.empty()) << backends.error;
  const ModelWeights& weights = *backends.weights;
  kernels::ThreadPool& pool = backends.pool;
  EXPECT_EQ(backends.cuda->name(), kind_name);
  EXPECT_EQ(backends.cuda->vocab_size(), backends.cpu->vocab_size());
  EXPECT_EQ(backends.cuda->kv_block_bytes(KvCacheType::f16, kBlockSize),
            backends.cpu->kv_block_bytes(KvCacheType::f16, kBlockSize));

  const Trace expected = run(*backends.cpu);
  const Trace actual = run(*backends.cuda);
  ASSERT_EQ(actual.logits.size(), expected.logits.size());
  float max_difference = 0;
  float max_magnitude = 0;
  std::string first_past;  // where the logits first part by more than kTolerance
  for (std::size_t step = 0; step < expected.logits.size(); ++step) {
    const std::vector<float>& want = expected.logits[step];
    const std::vector<float>& got = actual.logits[step];
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "step " << step << " logit " << i;
      const float difference = std::abs(got[i] - want[i]);
      max_difference = std::max(max_difference, difference);
      max_magnitude = std::max(max_magnitude, std::abs(want[i]));
      ASSERT_LE(difference, kRequantizedTolerance) << "step " << step << " logit " << i;
      if (difference > kTolerance && first_past.empty())
        first_past = "step " + std::to_string(step) + " logit " + std::to_string(i);
    }
  }
  std::printf("%s: max |%s - cpu| = %.3g over logits up to %.3g; cpu %.3f s, %s %.3f s\n",
              GetParam(), kind_name.c_str(), static_cast<double>(max_difference),
              static_cast<double>(max_magnitude), expected.seconds, kind_name.c_str(),
              actual.seconds);
  if (first_past.empty()) return;
  // Past kTolerance: traced again on fresh backends, the first op that parts must be a
  // requantization.
  auto traced_cpu = create_backend(spec_of(BackendKind::cpu), weights, pool);
  auto traced_cuda = create_backend(spec_of(kind), weights, pool);
  ASSERT_TRUE(traced_cpu.ok() && traced_cuda.ok());
  const OpTraceComparison compared =
      compare_op_traces(weights, record_op_trace(**traced_cpu), record_op_trace(**traced_cuda),
                        kind_name, kTolerance);
  ASSERT_TRUE(compared.failure.empty() && !compared.requantization.empty())
      << GetParam() << ": the logits part by more than " << kTolerance << " from " << first_past
      << ", and the op trace does not show a requantization where they begin to: "
      << (compared.failure.empty() ? "no op parts" : compared.failure);
  std::printf("%s: past %g from %s, where %s\n", GetParam(), static_cast<double>(kTolerance),
              first_past.c_str(), compared.requantization.c_str());
}

INSTANTIATE_TEST_SUITE_P(SharedModels, CudaBackendLogits,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/tinystories-656k-q8_0.gguf",
                                           "models/tinystories-656k-q4_0.gguf",
                                           "models/random-qwen2-tiny", "models/random-qwen3-tiny"));

// BF16 and F16 weights: the CUDA backend multiplies them on tensor cores with the activations
// rounded to the weights' type (kernels/cuda/float_mma_kernel.cuh), the CPU backend with f32
// activations, so the logits part by what that rounding (at most a relative 2^-9 for BF16,
// 2^-12 for F16, at each matmul input) carries through the layers. Allowed: four such units of
// the largest logit (measured on random:tiny: 2.9e-3 of it for BF16, 4.1e-4 for F16).
class CudaBackendSixteenBitLogits : public ::testing::TestWithParam<const char*> {};

float sixteen_bit_tolerance(std::string_view spec) {
  return spec.find("bf16") != std::string_view::npos ? 4 * 0x1p-9f : 4 * 0x1p-12f;
}

TEST_P(CudaBackendSixteenBitLogits, EqualTheCpuBackendUpToTheActivationRounding) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  SideBySide backends(GetParam(), kind);
  ASSERT_TRUE(backends.error.empty()) << backends.error;
  const Trace expected = run(*backends.cpu);
  const Trace actual = run(*backends.cuda);
  ASSERT_EQ(actual.logits.size(), expected.logits.size());
  float max_difference = 0;
  float max_magnitude = 0;
  for (std::size_t step = 0; step < expected.logits.size(); ++step) {
    ASSERT_EQ(actual.logits[step].size(), expected.logits[step].size());
    for (std::size_t i = 0; i < expected.logits[step].size(); ++i) {
      ASSERT_TRUE(std::isfinite(actual.logits[step][i])) << "step " << step << " logit " << i;
      max_difference =
          std::max(max_difference, std::abs(actual.logits[step][i] - expected.logits[step][i]));
      max_magnitude = std::max(max_magnitude, std::abs(expected.logits[step][i]));
    }
  }
  std::printf("%s: max |%s - cpu| = %.3g over logits up to %.3g\n", GetParam(), kind_name.c_str(),
              static_cast<double>(max_difference), static_cast<double>(max_magnitude));
  EXPECT_LE(max_difference, sixteen_bit_tolerance(GetParam()) * max_magnitude);
}

INSTANTIATE_TEST_SUITE_P(RandomModels, CudaBackendSixteenBitLogits,
                         ::testing::Values("random:tiny:bf16", "random:tiny:f16"));

// The CUDA backend has no router, expert or latent-attention kernels: such models are refused at
// creation, naming what is missing, rather than failing at the first step.
TEST(CudaBackendArchitectures, RefusesMixtureOfExpertsAndLatentAttentionModels) {
  kernels::ThreadPool pool(1);
  for (const char* model : {"models/random-mixtral-tiny", "models/random-deepseek-v3-tiny"}) {
    TERN_REQUIRE_SHARED(model_path, model);
    auto weights = load_model(model_path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    auto backend = create_backend(spec_of(BackendKind::cuda_emulated), *weights, pool);
    ASSERT_FALSE(backend.ok()) << model;
    const std::string& message = backend.error().message;
    EXPECT_NE(message.find("backend has no "), std::string::npos) << message;
    EXPECT_NE(
        message.find("serve this " + weights->config().architecture + " model with backend cpu"),
        std::string::npos)
        << message;
  }
}

class CudaBackendLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-f32.gguf");
    auto weights = load_model(model_path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }

  std::optional<ModelWeights> weights_;
  kernels::ThreadPool pool_{1};
};

// A model larger than the device fails at creation, naming what did not fit and the sizes.
TEST_F(CudaBackendLimits, AModelThatDoesNotFitFailsWithItsSizes) {
  BackendSpec spec = spec_of(BackendKind::cuda_emulated);
  spec.emulated.memory_bytes = 256 << 10;
  auto backend = create_backend(spec, *weights_, pool_);
  ASSERT_FALSE(backend.ok());
  const std::string& message = backend.error().message;
  EXPECT_EQ(message.rfind("backend cuda-emulated: cuda-emulated: out of memory on device 0: the "
                          "weights of ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("bytes, 262144 of 262144 are free"), std::string::npos) << message;
}

TEST_F(CudaBackendLimits, AnF32KvCacheIsRefusedNamingTheSetting) {
  auto backend = create_backend(spec_of(BackendKind::cuda_emulated), *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  const Status f32 = (*backend)->allocate_kv_cache({KvCacheType::f32, kBlockSize, 4});
  ASSERT_FALSE(f32.ok());
  EXPECT_NE(f32.message().find("kv_cache_dtype f32 is not supported"), std::string::npos)
      << f32.message();
  EXPECT_TRUE((*backend)->allocate_kv_cache({KvCacheType::bf16, kBlockSize, 4}).ok());
}

// A KV cache larger than what the weights and activations leave fails with the sizes, and the
// backend then refuses to run rather than reading a cache it does not have.
TEST_F(CudaBackendLimits, AKvCacheThatDoesNotFitFailsWithItsSizes) {
  BackendSpec spec = spec_of(BackendKind::cuda_emulated);
  spec.emulated.memory_bytes = 16 << 20;
  auto backend = create_backend(spec, *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  const Status too_large = (*backend)->allocate_kv_cache({KvCacheType::f16, kBlockSize, 4096});
  ASSERT_FALSE(too_large.ok());
  EXPECT_EQ(
      too_large.message().rfind("cuda-emulated: out of memory on device 0: the KV cache (4096 "
                                "blocks of 2048 bytes, K and V, in 2 layers) needs ",
                                0),
      0u)
      << too_large.message();
  const BatchPlan plan = make_plan(std::vector<Part>{{0, 0, 1, true}}, (*backend)->vocab_size());
  std::vector<float> logits(static_cast<std::size_t>((*backend)->vocab_size()));
  EXPECT_EQ((*backend)->forward(plan, logits).message(),
            "batch plan: forward() before allocate_kv_cache()");
  EXPECT_TRUE((*backend)->allocate_kv_cache({KvCacheType::f16, kBlockSize, kBlocks}).ok());
  EXPECT_TRUE((*backend)->forward(plan, logits).ok());
}

// Two devices are a tensor-parallel group of two ranks; one device (any of them) is a plain
// CUDA backend.
TEST_F(CudaBackendLimits, SeveralDevicesMakeATensorParallelGroup) {
  BackendSpec spec = spec_of(BackendKind::cuda_emulated);
  spec.emulated.devices = 2;
  spec.devices = {0, 1};
  auto group = create_backend(spec, *weights_, pool_);
  ASSERT_TRUE(group.ok()) << group.error().message;
  EXPECT_EQ(dynamic_cast<cuda::TensorParallelBackend&>(**group).ranks(), 2);
  spec.devices = {1};
  auto one = create_backend(spec, *weights_, pool_);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_NE(dynamic_cast<cuda::CudaBackend*>(one->get()), nullptr);
}

// Everything a forward pass needs is allocated with the backend and its KV cache: the device's
// free memory is the same after prefill and decode steps as before them.
TEST_F(CudaBackendLimits, AForwardPassAllocatesNoDeviceMemory) {
  auto owned = cuda::make_emulated_device_runtime(EmulatedDeviceOptions{});
  cuda::DeviceRuntime* runtime = owned.get();  // owned by the backend from here on
  const BackendSpec spec = spec_of(BackendKind::cuda_emulated);
  auto backend = cuda::CudaBackend::create(std::move(owned), 0, *weights_, spec.options);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  ASSERT_TRUE((*backend)->allocate_kv_cache({KvCacheType::f16, kBlockSize, kBlocks}).ok());
  const std::uint64_t free_before = runtime->memory_info()->free_bytes;
  const std::int32_t vocab = (*backend)->vocab_size();
  for (const Step& step : steps()) {
    if (!step.copies_before.empty()) {
      ASSERT_TRUE((*backend)->copy_kv_blocks(step.copies_before).ok());
    }
    const BatchPlan plan = make_plan(step.parts, vocab);
    std::vector<float> logits(static_cast<std::size_t>(plan.num_logit_rows()) *
                              static_cast<std::size_t>(vocab));
    ASSERT_TRUE((*backend)->forward(plan, logits).ok());
    EXPECT_EQ(runtime->memory_info()->free_bytes, free_before);
  }
}

// The plan's device buffers hold max_sequences chunks; a plan with more (possible when some
// want no logits) is refused rather than written past them.
TEST_F(CudaBackendLimits, APlanWithMoreSequencesThanTheBackendTakesIsRefused) {
  auto backend = create_backend(spec_of(BackendKind::cuda_emulated), *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  ASSERT_TRUE((*backend)->allocate_kv_cache({KvCacheType::f16, kBlockSize, kBlocks}).ok());
  std::vector<Part> parts;
  for (int s = 0; s < 4; ++s) parts.push_back({s, 0, 1, false});
  parts.push_back({0, 1, 1, true});
  const BatchPlan plan = make_plan(parts, (*backend)->vocab_size());
  std::vector<float> logits(static_cast<std::size_t>((*backend)->vocab_size()));
  const Status refused = (*backend)->forward(plan, logits);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "batch plan: 5 tokens of 5 sequences, the backend takes 32 of 4");
}

}  // namespace
}  // namespace tern::engine
