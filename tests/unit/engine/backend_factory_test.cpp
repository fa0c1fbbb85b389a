#include "engine/backend/backend_factory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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
  const auto tpu = parse_backend_kind("tpu");
  ASSERT_FALSE(tpu.ok());
  EXPECT_EQ(tpu.error().message, "backend must be cpu or cuda, got 'tpu'");
  EXPECT_EQ(to_string(BackendKind::cuda), "cuda");
}

TEST(BackendFactory, CpuRunsAnywhereButTakesNoDevices) {
  EXPECT_TRUE(check_backend_available({.kind = BackendKind::cpu}, machine(false, 0)).ok());
  EXPECT_TRUE(check_backend_available({.kind = BackendKind::cpu}).ok());
  EXPECT_EQ(refusal({.kind = BackendKind::cpu, .devices = {0}}, machine(true, 1)),
            "backend cpu: devices are CUDA ordinals, only valid with backend cuda");
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
  EXPECT_EQ(refusal(cuda, machine(true, 2)), "backend cuda: " + std::string(kNoCudaBackendYet));
  EXPECT_EQ(refusal({.kind = BackendKind::cuda, .devices = {1}}, machine(true, 2)),
            "backend cuda: " + std::string(kNoCudaBackendYet));
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
// factory says so and builds nothing.
TEST_F(BackendFactoryModel, CudaIsAnErrorNamingTheReasonOnThisMachine) {
  const BackendSpec spec{.kind = BackendKind::cuda};
  auto backend = create_backend(spec, *weights_, pool_);
  ASSERT_FALSE(backend.ok()) << "built a " << (*backend)->name() << " backend for cuda";
  EXPECT_EQ(backend.error().message, check_backend_available(spec).message());
  EXPECT_EQ(backend.error().message.rfind("backend cuda: ", 0), 0u) << backend.error().message;
}

// A served model names itself and the reason, and is refused before its weights are read
// (the path does not even exist).
TEST(BackendFactory, ServedModelWithCudaNamesTheModelAndTheReason) {
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

}  // namespace
}  // namespace tern::engine
