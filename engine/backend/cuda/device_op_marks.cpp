#include "engine/backend/cuda/device_op_marks.h"

#include <fmt/format.h>

namespace tern::engine::cuda {

DeviceOpMarks::~DeviceOpMarks() {
  for (const Event event : events_) runtime_.destroy_event(event);
}

void DeviceOpMarks::mark(std::size_t index) {
  if (!status_.ok()) return;
  while (events_.size() <= index) {
    Expected<Event> event = runtime_.create_timing_event();
    if (!event.ok()) {
      status_ = event.error();
      return;
    }
    events_.push_back(*event);
  }
  status_ = runtime_.record(events_[index], stream_);
}

Expected<double> DeviceOpMarks::seconds_between(std::size_t from, std::size_t to) {
  if (!status_.ok()) return status_.error();
  if (from >= events_.size() || to >= events_.size()) {
    return Error{fmt::format("op timing: marks {} and {} of {} made", from, to, events_.size())};
  }
  return runtime_.elapsed_seconds(events_[from], events_[to]);
}

}  // namespace tern::engine::cuda
