#include "engine/backend/backend_factory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "engine/model/demo_model.h"
#include "engine/served_model.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {
namespace {

constexpr std::string_view kNoDevice =
    "no CUDA device found (cudaErrorNoDevice: no CUDA-capable device is detected)";

DeviceReport machine(bool cuda_compiled, int cuda_devices) {
  DeviceReport report;
  report.cuda_compiled = cuda_compiled;
  report.cuda_status = cuda_devices == 0 ? std::string(kNoDevice) : "runtime 13.0, driver 13.0";
  report.devices.push_back({.kind = DeviceKind::cpu, .name = "CPU"});
  for (int index = 0; index < cuda_devices; ++index) {
    report.devices.push_back({.kind = DeviceKind::cuda, .index = index, .name = "GPU"});
  }
  return report;
}

std::string refusal(const BackendSpec& spec, const DeviceReport& report) {
  const Status status = check_backend_available(spec, report);
  EXPECT_FALSE(status.ok()) << "backend " << to_string(spec.kind) << " was accepted";
  return status.message();
}

TEST(BackendFactory, ParsesTheKindsTheConfigNames) {
  EXPECT_EQ(*parse_backend_kind("cpu"), BackendKind::cpu);
  EXPECT_EQ(*parse_backend_kind("cuda"), BackendKind::cuda);
  EXPECT_EQ(*parse_backend_kind("cuda-emulated"), BackendKind::cuda_emulated);
  const auto tpu = parse_backend_kind("tpu");
  ASSERT_FALSE(tpu.ok());
  EXPECT_EQ(tpu.error().message, "backend must be cpu, cuda or cuda-emulated, got 'tpu'");
  EXPECT_FALSE(parse_backend_kind("cuda_emulated").ok());
  EXPECT_EQ(to_string(BackendKind::cuda), "cuda");
  EXPECT_EQ(to_string(BackendKind::cuda_emulated), "cuda-emulated");
  EXPECT_FALSE(is_cuda(BackendKind::cpu));
  EXPECT_TRUE(is_cuda(BackendKind::cuda));
  EXPECT_TRUE(is_cuda(BackendKind::cuda_emulated));
}

TEST(BackendFactory, SpecDefaultsFollowTheIssue) {
  const BackendSpec spec;
  EXPECT_DOUBLE_EQ(spec.cuda.gpu_memory_utilization, 0.9);
  EXPECT_TRUE(spec.cuda.cuda_graphs);
  EXPECT_EQ(spec.emulated.devices, 1);
  EXPECT_EQ(spec.emulated.memory_bytes, 4ull << 30);
  EXPECT_EQ(kMaxEmulatedDevices, 16);
}

TEST(BackendFactory, CpuRunsAnywhereButTakesNoDevices) {
  EXPECT_TRUE(check_backend_available({.kind = BackendKind::cpu}, machine(false, 0)).ok());
  EXPECT_TRUE(check_backend_available({.kind = BackendKind::cpu}).ok());
  EXPECT_EQ(refusal({.kind = BackendKind::cpu, .devices = {0}}, machine(true, 1)),
            "backend cpu: devices are CUDA ordinals, only valid with backend cuda or "
            "cuda-emulated");
}

// Each reason a cuda backend cannot run, most basic first, and never a fallback to the CPU.
TEST(BackendFactory, CudaSaysWhyItCannotRun) {
  const BackendSpec cuda{.kind = BackendKind::cuda};
  EXPECT_EQ(refusal(cuda, machine(false, 0)),
            "backend cuda: no CUDA in this build (built with TERN_CUDA=OFF or without nvcc)");
  EXPECT_EQ(refusal(cuda, machine(true, 0)), "backend cuda: " + std::string(kNoDevice));
  EXPECT_EQ(refusal({.kind = BackendKind::cuda, .devices = {0, 1}}, machine(true, 1)),
            "backend cuda: there is no CUDA device 1; this machine has 1 (runtime 13.0, driver "
            "13.0)");
  // Two devices are tensor parallelism: available where both are.
  EXPECT_TRUE(
      check_backend_available({.kind = BackendKind::cuda, .devices = {0, 1}}, machine(true, 2))
          .ok());
  // Where the device is, the CUDA backend is made (on its DeviceRuntime over cudart).
  EXPECT_TRUE(check_backend_available(cuda, machine(true, 2)).ok());
  EXPECT_TRUE(
      check_backend_available({.kind = BackendKind::cuda, .devices = {1}}, machine(true, 2)).ok());
}

// The emulator is in every build and needs no GPU or driver, so cuda-emulated runs anywhere;
// its devices are the emulated machine's, not this one's.
TEST(BackendFactory, CudaEmulatedNeedsNoDevice) {
  const BackendSpec emulated{.kind = BackendKind::cuda_emulated};
  EXPECT_TRUE(check_backend_available(emulated, machine(false, 0)).ok());
  EXPECT_TRUE(check_backend_available(emulated, machine(true, 0)).ok());
  EXPECT_TRUE(check_backend_available(emulated).ok());
  BackendSpec two{.kind = BackendKind::cuda_emulated, .devices = {0, 1}};
  EXPECT_EQ(
      refusal(two, machine(true, 4)),
      "backend cuda-emulated: there is no emulated CUDA device 1; the emulated machine has 1");
  two.emulated.devices = 2;
  EXPECT_TRUE(check_backend_available(two, machine(false, 0)).ok());  // tensor parallelism
  EXPECT_TRUE(check_backend_available(
                  {.kind = BackendKind::cuda_emulated, .devices = {1}, .emulated = {.devices = 2}},
                  machine(false, 0))
                  .ok());
}

// Values a spec built in code could carry that no config or flag accepts.
TEST(BackendFactory, OutOfRangeCudaOptionsAreRefusedFirst) {
  BackendSpec cuda{.kind = BackendKind::cuda};
  cuda.cuda.gpu_memory_utilization = 0;
  EXPECT_EQ(refusal(cuda, machine(false, 0)),
            "backend cuda: gpu_memory_utilization must be in (0, 1], got 0");
  cuda.cuda.gpu_memory_utilization = 1.5;
  EXPECT_EQ(refusal(cuda, machine(true, 1)),
            "backend cuda: gpu_memory_utilization must be in (0, 1], got 1.5");
  BackendSpec emulated{.kind = BackendKind::cuda_emulated};
  emulated.emulated.devices = 17;
  EXPECT_EQ(refusal(emulated, machine(false, 0)),
            "backend cuda-emulated: the emulated device count must be in 1..16, got 17");
  emulated.emulated.devices = 1;
  emulated.emulated.memory_bytes = 0;
  EXPECT_EQ(refusal(emulated, machine(false, 0)),
            "backend cuda-emulated: the emulated device memory must be > 0 bytes");
  // The CPU ignores them: --check warns about such keys, nothing refuses them.
  BackendSpec cpu;
  cpu.cuda.gpu_memory_utilization = 0;
  cpu.emulated.devices = 0;
  EXPECT_TRUE(check_backend_available(cpu, machine(false, 0)).ok());
}

class BackendFactoryModel : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("tern-backend-factory-" + std::to_string(::getpid()) + ".gguf");
    ASSERT_TRUE(write_demo_model(path_.string()).ok());
    auto weights = load_model(path_.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::filesystem::path path_;
  std::optional<ModelWeights> weights_;
  kernels::ThreadPool pool_{1};
};

TEST_F(BackendFactoryModel, BuildsTheCpuBackendWithTheSpecsSizes) {
  BackendSpec spec;
  spec.options = {.max_sequences = 3, .max_batch_tokens = 40, .max_context = 128};
  auto backend = create_backend(spec, *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->name(), "cpu");
  EXPECT_EQ((*backend)->max_sequences(), 3);
  EXPECT_EQ((*backend)->max_batch_tokens(), 40);
  EXPECT_EQ((*backend)->vocab_size(), weights_->config().vocab_size);
}

// Whatever this machine lacks for cuda (the build, a device, or the backend itself), the
// factory says so and builds nothing; where it lacks nothing, it builds the CUDA backend.
TEST_F(BackendFactoryModel, CudaIsAnErrorNamingTheReasonOnThisMachine) {
  const BackendSpec spec{.kind = BackendKind::cuda};
  auto backend = create_backend(spec, *weights_, pool_);
  if (check_backend_available(spec).ok()) {
    ASSERT_TRUE(backend.ok()) << backend.error().message;
    EXPECT_EQ((*backend)->name(), "cuda");
    return;
  }
  ASSERT_FALSE(backend.ok()) << "built a " << (*backend)->name() << " backend for cuda";
  EXPECT_EQ(backend.error().message, check_backend_available(spec).message());
  EXPECT_EQ(backend.error().message.rfind("backend cuda: ", 0), 0u) << backend.error().message;
}

TEST_F(BackendFactoryModel, BuildsTheCudaBackendOnTheEmulatedDevice) {
  BackendSpec spec{.kind = BackendKind::cuda_emulated};
  spec.options = {.max_sequences = 3, .max_batch_tokens = 40, .max_context = 128};
  auto backend = create_backend(spec, *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  EXPECT_EQ((*backend)->name(), "cuda-emulated");
  EXPECT_EQ((*backend)->max_sequences(), 3);
  EXPECT_EQ((*backend)->max_batch_tokens(), 40);
  EXPECT_EQ((*backend)->vocab_size(), weights_->config().vocab_size);
}

// Without a usable GPU, a served model names itself and the reason, and is refused before its
// weights are read (the path does not even exist).
TEST(BackendFactory, ServedModelWithCudaWithoutAGpuNamesTheModelAndTheReason) {
  if (check_backend_available({.kind = BackendKind::cuda}).ok()) {
    GTEST_SKIP() << "a CUDA device is usable here";
  }
  ModelSpec spec;
  spec.name = "gpu-model";
  spec.path = "/nonexistent/model.gguf";
  spec.backend = BackendKind::cuda;
  kernels::ThreadPool pool(1);
  auto served = load_served_model(spec, pool);
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.error().message,
            "model 'gpu-model' (/nonexistent/model.gguf): " +
                check_backend_available({.kind = BackendKind::cuda}).message());
}

TEST(BackendFactory, ServedModelCarriesItsCudaSettingsIntoTheBackendSpec) {
  ModelSpec spec;
  spec.backend = BackendKind::cuda_emulated;
  spec.devices = {0, 1};
  spec.cuda = {.gpu_memory_utilization = 0.5, .cuda_graphs = false};
  spec.emulated_device = {.devices = 2, .memory_bytes = 1ull << 20};
  const BackendSpec backend = backend_spec_of(spec);
  EXPECT_EQ(backend.kind, BackendKind::cuda_emulated);
  EXPECT_EQ(backend.devices, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(backend.cuda.gpu_memory_utilization, 0.5);
  EXPECT_FALSE(backend.cuda.cuda_graphs);
  EXPECT_EQ(backend.emulated.devices, 2);
  EXPECT_EQ(backend.emulated.memory_bytes, 1ull << 20);
}

// Past the backend check, a cuda-emulated model is loaded as any other: a missing file is named.
TEST(BackendFactory, ServedModelWithCudaEmulatedReadsItsWeights) {
  ModelSpec spec;
  spec.name = "emulated";
  spec.path = "/nonexistent/model.gguf";
  spec.backend = BackendKind::cuda_emulated;
  kernels::ThreadPool pool(1);
  auto served = load_served_model(spec, pool);
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.error().message.rfind("model 'emulated' (/nonexistent/model.gguf): ", 0), 0u)
      << served.error().message;
  EXPECT_EQ(served.error().message.find("backend"), std::string::npos) << served.error().message;
}

// The CUDA kernels take f16 and bf16 KV caches only; a spec built in code is refused too.
TEST(BackendFactory, ServedModelOnCudaRefusesAnF32KvCache) {
  for (const BackendKind kind : {BackendKind::cuda, BackendKind::cuda_emulated}) {
    ModelSpec spec;
    spec.name = "m";
    spec.path = "/nonexistent/model.gguf";
    spec.backend = kind;
    spec.kv_cache_type = KvCacheType::f32;
    kernels::ThreadPool pool(1);
    auto served = load_served_model(spec, pool);
    ASSERT_FALSE(served.ok());
    EXPECT_EQ(served.error().message,
              fmt::format("model 'm' (/nonexistent/model.gguf): kv_cache_dtype f32 is not "
                          "supported by backend {}: its kernels take f16 and bf16",
                          to_string(kind)));
  }
}

}  // namespace
}  // namespace tern::engine
