#include "service/model_spec.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

TEST(ModelSpec, CarriesTheConfigsBackendAndDevices) {
  ModelConfig config;
  config.name = "gpu-model";
  config.backend = "cuda";
  config.devices = {0, 1};
  const engine::ModelSpec spec = to_model_spec(config);
  EXPECT_EQ(spec.backend, engine::BackendKind::cuda);
  EXPECT_EQ(spec.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(to_model_spec(ModelConfig{}).backend, engine::BackendKind::cpu);
}

}  // namespace
}  // namespace tern::service
