#include "engine/backend/device.h"

#include <gtest/gtest.h>

namespace tern::engine {
namespace {

TEST(DiscoverDevices, CpuIsAlwaysFirst) {
  const DeviceReport report = discover_devices();
  ASSERT_FALSE(report.devices.empty());
  EXPECT_EQ(report.devices.front().kind, DeviceKind::cpu);
  EXPECT_FALSE(report.devices.front().name.empty());
  EXPECT_GT(report.devices.front().memory_bytes, 0u);
}

TEST(DiscoverDevices, ExplainsCudaState) {
  const DeviceReport report = discover_devices();
  EXPECT_FALSE(report.cuda_status.empty());
  for (std::size_t i = 1; i < report.devices.size(); ++i) {
    EXPECT_EQ(report.devices[i].kind, DeviceKind::cuda);
    EXPECT_TRUE(report.cuda_compiled);
  }
}

}  // namespace
}  // namespace tern::engine
