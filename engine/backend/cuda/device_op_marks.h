#pragma once

// OpMarks (engine/backend/op_timing.h) on a device's stream: mark i records timing event i, made
// when first needed and kept for later passes.

#include <cstddef>
#include <vector>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/backend/op_timing.h"

namespace tern::engine::cuda {

class DeviceOpMarks final : public OpMarks {
 public:
  // `runtime` must outlive the object.
  DeviceOpMarks(DeviceRuntime& runtime, Stream stream) : runtime_(runtime), stream_(stream) {}
  ~DeviceOpMarks() override;
  DeviceOpMarks(const DeviceOpMarks&) = delete;
  DeviceOpMarks& operator=(const DeviceOpMarks&) = delete;

  void mark(std::size_t index) override;
  // Once the stream has finished the pass.
  Expected<double> seconds_between(std::size_t from, std::size_t to) override;
  // The first failure to make or record an event, or success.
  const Status& status() const { return status_; }

 private:
  DeviceRuntime& runtime_;
  Stream stream_;
  std::vector<Event> events_;
  Status status_;
};

}  // namespace tern::engine::cuda
