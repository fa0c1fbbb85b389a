#include "engine/backend/cuda/decode_graphs.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tern::engine::cuda {

std::vector<int> DecodeGraphs::bucket_sizes(int largest) {
  std::vector<int> sizes;
  for (int rows : {1, 2, 4, 8}) {
    if (rows < largest) sizes.push_back(rows);
  }
  for (int rows = 16; rows < largest; rows += 8) sizes.push_back(rows);
  if (largest > 0) sizes.push_back(largest);
  return sizes;
}

Status DecodeGraphs::capture(DeviceRuntime& runtime, Stream stream, int largest,
                             const std::function<Status(int rows)>& issue) {
  clear();
  runtime_ = &runtime;
  const auto free_before = runtime.memory_info();
  const auto all_start = std::chrono::steady_clock::now();
  for (int rows : bucket_sizes(largest)) {
    const auto start = std::chrono::steady_clock::now();
    if (Status begun = runtime.begin_capture(stream); !begun.ok()) return begun;
    const Status issued = issue(rows);
    auto graph = runtime.end_capture(stream);  // ends the capture even after a failed issue
    if (!issued.ok()) {
      if (graph) runtime.destroy_graph(*graph);
      return Error{fmt::format("{}: capturing the decode graph of {} rows: {}", runtime.name(),
                               rows, issued.message())};
    }
    if (!graph) return graph.error();
    graphs_.push_back({rows, *graph});
    ++captures_;
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    spdlog::info("{}: captured the decode graph of {} rows in {:.2f} ms", runtime.name(), rows,
                 took.count());
  }
  const std::chrono::duration<double, std::milli> took =
      std::chrono::steady_clock::now() - all_start;
  const auto free_after = runtime.memory_info();
  // The free memory the runtime reports on both sides, not a difference: graphs of kernel nodes
  // allocate nothing cudaMemGetInfo shows on the H200 (both sides equal there), and the emulated
  // device does not count graphs at all, so "0 bytes" would claim more than was measured.
  const std::string memory =
      free_before && free_after
          ? fmt::format("free device memory {:.1f} MiB before, {:.1f} MiB after",
                        static_cast<double>(free_before->free_bytes) / (1 << 20),
                        static_cast<double>(free_after->free_bytes) / (1 << 20))
          : std::string("free device memory not reported");
  spdlog::info("{}: {} decode graphs captured in {:.1f} ms; {}", runtime.name(), graphs_.size(),
               took.count(), memory);
  return Status::success();
}

void DecodeGraphs::clear() {
  for (const Bucket& bucket : graphs_) runtime_->destroy_graph(bucket.graph);
  graphs_.clear();
}

int DecodeGraphs::bucket_for(int sequences) const {
  const auto found =
      std::ranges::find_if(graphs_, [&](const Bucket& bucket) { return bucket.rows >= sequences; });
  return found == graphs_.end() ? 0 : found->rows;
}

Status DecodeGraphs::launch(int bucket_rows, Stream stream) {
  const auto found = std::ranges::find_if(
      graphs_, [&](const Bucket& bucket) { return bucket.rows == bucket_rows; });
  if (found == graphs_.end()) {
    return Error{fmt::format("no decode graph of {} rows", bucket_rows)};
  }
  ++replays_;
  return runtime_->launch_graph(found->graph, stream);
}

}  // namespace tern::engine::cuda
