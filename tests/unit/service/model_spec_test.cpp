#include "service/model_spec.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

TEST(ModelSpec, CarriesTheConfigsBackendAndDevices) {
  ModelConfig config;
  config.name = "gpu-model";
  config.backend = "cuda";
  config.devices = {0, 1};
  const engine::ModelSpec spec = to_model_spec(config, {});
  EXPECT_EQ(spec.backend, engine::BackendKind::cuda);
  EXPECT_EQ(spec.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(to_model_spec(ModelConfig{}, {}).backend, engine::BackendKind::cpu);
}

TEST(ModelSpec, CarriesTheStructuredOutputBounds) {
  ModelConfig config;
  config.structured_outputs_max_concurrent_compiles = 3;
  config.structured_outputs_max_mask_work = 123456;
  const engine::ModelSpec spec = to_model_spec(config, {});
  EXPECT_EQ(spec.structured_outputs_max_concurrent_compiles, 3);
  EXPECT_EQ(spec.structured_outputs_max_mask_work, 123456u);
  EXPECT_EQ(to_model_spec(ModelConfig{}, {}).structured_outputs_max_mask_work,
            engine::kDefaultGrammarStepWork);
}

TEST(ModelSpec, UnsetCudaSettingsTakeTheDefaults) {
  ModelConfig config;
  config.backend = "cuda";
  const engine::ModelSpec spec = to_model_spec(config, {});
  EXPECT_DOUBLE_EQ(spec.cuda.gpu_memory_utilization, 0.9);
  EXPECT_TRUE(spec.cuda.cuda_graphs);
  EXPECT_EQ(spec.emulated_device.devices, 1);
  EXPECT_EQ(spec.emulated_device.memory_bytes, 4ull << 30);
}

TEST(ModelSpec, CarriesTheCudaSettingsAndTheEmulatedMachine) {
  ModelConfig config;
  config.backend = "cuda-emulated";
  config.devices = {1};
  config.gpu_memory_utilization = 0.75;
  config.cuda_graphs = false;
  EmulatedDeviceConfig emulated;
  emulated.count = 3;
  emulated.memory_bytes = 512ull << 20;
  const engine::ModelSpec spec = to_model_spec(config, emulated);
  EXPECT_EQ(spec.backend, engine::BackendKind::cuda_emulated);
  EXPECT_EQ(spec.devices, (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(spec.cuda.gpu_memory_utilization, 0.75);
  EXPECT_FALSE(spec.cuda.cuda_graphs);
  EXPECT_EQ(spec.emulated_device.devices, 3);
  EXPECT_EQ(spec.emulated_device.memory_bytes, 512ull << 20);
  const engine::BackendSpec backend = engine::backend_spec_of(spec);
  EXPECT_EQ(backend.kind, engine::BackendKind::cuda_emulated);
  EXPECT_DOUBLE_EQ(backend.cuda.gpu_memory_utilization, 0.75);
  EXPECT_EQ(backend.emulated.devices, 3);
}

TEST(ModelSpec, CarriesTensorParallelIntoTheBackendSpec) {
  ModelConfig config;
  config.backend = "cuda-emulated";
  config.tensor_parallel = 2;
  const engine::ModelSpec spec = to_model_spec(config, {});
  EXPECT_EQ(spec.tensor_parallel, 2);
  const engine::BackendSpec backend = engine::backend_spec_of(spec);
  EXPECT_EQ(backend.tensor_parallel, 2);
  EXPECT_EQ(*engine::tensor_parallel_devices(backend), (std::vector<int>{0, 1}));
  EXPECT_EQ(to_model_spec(ModelConfig{}, {}).tensor_parallel, 0);
}

}  // namespace
}  // namespace tern::service
