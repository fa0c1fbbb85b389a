#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// The CUDA graphs of decode-only steps, one per batch-size bucket (1, 2, 4, 8, then every 8, the
// last one the largest batch). A step of B sequences replays the smallest bucket of at least B
// rows; the rows past B are inert (DevicePlan::upload's inert_rows_to). A graph freezes the
// device addresses of the plan, the activations and the KV pools, so it is dropped whenever the
// KV pool is reallocated.
class DecodeGraphs {
 public:
  DecodeGraphs() = default;
  ~DecodeGraphs() { clear(); }
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // 1, 2, 4, 8, 16, 24, ... while below `largest`, then `largest`.
  static std::vector<int> bucket_sizes(int largest);

  // Captures one graph per bucket of at most `largest` rows on `stream`; `issue(rows)` issues a
  // decode step of `rows` rows (it must only launch, copy or fill). Replaces any graphs held.
  Status capture(DeviceRuntime& runtime, Stream stream, int largest,
                 const std::function<Status(int rows)>& issue);
  // Destroys every graph.
  void clear();

  // The rows of the bucket a step of `sequences` sequences replays, or 0 when none fits.
  int bucket_for(int sequences) const;
  Status launch(int bucket_rows, Stream stream);

  int graph_count() const { return static_cast<int>(graphs_.size()); }
  // Graphs captured over the backend's life, recaptures included.
  std::int64_t captures() const { return captures_; }
  // Graph launches over the backend's life.
  std::int64_t replays() const { return replays_; }

 private:
  struct Bucket {
    int rows;
    Graph graph;
  };
  DeviceRuntime* runtime_ = nullptr;
  std::vector<Bucket> graphs_;  // by rows, ascending
  std::int64_t captures_ = 0;
  std::int64_t replays_ = 0;
};

}  // namespace tern::engine::cuda
