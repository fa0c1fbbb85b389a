#include "engine/backend/backend_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/served_model.h"

namespace tern::engine {
namespace {

std::vector<int> devices_of(const BackendSpec& spec) {
  const auto devices = tensor_parallel_devices(spec);
  EXPECT_TRUE(devices.ok()) << devices.error().message;
  return devices ? *devices : std::vector<int>{};
}

std::string refusal(const BackendSpec& spec) {
  const auto devices = tensor_parallel_devices(spec);
  EXPECT_FALSE(devices.ok()) << "tensor_parallel " << spec.tensor_parallel << " was accepted";
  if (devices) return {};
  EXPECT_EQ(devices.error().kind, ErrorKind::invalid_field);
  EXPECT_EQ(devices.error().field, "tensor_parallel");
  return devices.error().message;
}

TEST(TensorParallelDevices, NeitherKeyIsOneRankOnDeviceZero) {
  EXPECT_EQ(BackendSpec{}.tensor_parallel, 0);
  for (const BackendKind kind : {BackendKind::cpu, BackendKind::cuda, BackendKind::cuda_emulated}) {
    EXPECT_EQ(devices_of({.kind = kind}), (std::vector<int>{0})) << to_string(kind);
    EXPECT_EQ(devices_of({.kind = kind, .tensor_parallel = 1}), (std::vector<int>{0}))
        << to_string(kind);
  }
}

TEST(TensorParallelDevices, DevicesAloneAreTheRanksInTheirOrder) {
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda, .devices = {3}}), (std::vector<int>{3}));
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda, .devices = {2, 0, 1}}),
            (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda_emulated, .devices = {1, 0}}),
            (std::vector<int>{1, 0}));
}

TEST(TensorParallelDevices, TensorParallelAloneTakesTheFirstDevices) {
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda, .tensor_parallel = 2}),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda_emulated, .tensor_parallel = 4}),
            (std::vector<int>{0, 1, 2, 3}));
}

TEST(TensorParallelDevices, BothMustAgreeOnTheCount) {
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda, .devices = {1, 0}, .tensor_parallel = 2}),
            (std::vector<int>{1, 0}));
  EXPECT_EQ(devices_of({.kind = BackendKind::cuda, .devices = {5}, .tensor_parallel = 1}),
            (std::vector<int>{5}));
  EXPECT_EQ(refusal({.kind = BackendKind::cuda, .devices = {0, 1, 2}, .tensor_parallel = 2}),
            "tensor_parallel is 2 but devices lists 3 devices ([0, 1, 2])");
  EXPECT_EQ(refusal({.kind = BackendKind::cuda_emulated, .devices = {3}, .tensor_parallel = 2}),
            "tensor_parallel is 2 but devices lists 1 device ([3])");
  EXPECT_EQ(refusal({.kind = BackendKind::cuda, .devices = {0, 1}, .tensor_parallel = 1}),
            "tensor_parallel is 1 but devices lists 2 devices ([0, 1])");
}

TEST(TensorParallelDevices, RefusesACountBelowOne) {
  EXPECT_EQ(refusal({.kind = BackendKind::cuda, .tensor_parallel = -1}),
            "tensor_parallel must be >= 1, got -1");
  EXPECT_EQ(refusal({.kind = BackendKind::cpu, .tensor_parallel = -2}),
            "tensor_parallel must be >= 1, got -2");
}

TEST(TensorParallelDevices, CpuRunsOneRank) {
  EXPECT_EQ(refusal({.kind = BackendKind::cpu, .tensor_parallel = 2}),
            "tensor_parallel needs backend cuda or cuda-emulated");
}

TEST(TensorParallelDevices, ServedModelCarriesItIntoTheBackendSpec) {
  ModelSpec spec;
  spec.backend = BackendKind::cuda_emulated;
  spec.tensor_parallel = 2;
  EXPECT_EQ(backend_spec_of(spec).tensor_parallel, 2);
  EXPECT_EQ(backend_spec_of(ModelSpec{}).tensor_parallel, 0);
}

}  // namespace
}  // namespace tern::engine
