#pragma once

#include <cstdint>
#include <memory>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/batch_plan.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// A BatchPlan as the kernels read it: device arrays at addresses fixed for the backend's life
// (so a captured graph can replay over them) and the host-side sizes of the launches.
struct DevicePlanView {
  const std::int32_t* token_ids = nullptr;     // [tokens]
  const std::int32_t* positions = nullptr;     // [tokens]
  const std::int32_t* slots = nullptr;         // [tokens]: block * block_size + offset
  const std::int32_t* context_lens = nullptr;  // [sequences]: keys each chunk attends to
  const std::int32_t* query_starts = nullptr;  // [sequences + 1]: each chunk's first row
  const std::int32_t* logit_rows = nullptr;    // [logit_row_count]: rows whose logits are wanted
  const std::int32_t* block_tables = nullptr;  // [sequences][max_blocks_per_sequence]
  int tokens = 0;
  int sequences = 0;
  int logit_row_count = 0;
  int max_blocks_per_sequence = 0;
  int max_query_length = 0;    // longest chunk
  int max_context_length = 0;  // largest context_lens entry
  bool decode_only = false;    // every chunk is one token
};

// The plan's device copy, written each step through one pinned staging buffer in one
// asynchronous copy. Sized once for the backend's largest plan; a step allocates nothing.
class DevicePlan {
 public:
  // Room for max_tokens tokens of max_sequences sequences whose block tables are dense rows of
  // max_blocks_per_sequence blocks of block_size positions.
  static Expected<DevicePlan> create(DeviceRuntime& runtime, int max_tokens, int max_sequences,
                                     int max_blocks_per_sequence, int block_size);

  // Fills the staging buffer from a validated plan with at most max_sequences sequences and
  // issues its copy on `stream`. The staging buffer is reused by the next upload, so the caller
  // synchronizes `stream` between uploads (the backend does, once per forward pass).
  // `inert_rows_to` > the plan's sequences (a decode-only plan, for a CUDA graph of that many
  // rows) adds one-token rows up to it that change nothing: KV slot -1 (store_kv skips it),
  // context length 0 (attention skips it) and logit row 0 (gathered, never copied back).
  Status upload(const BatchPlan& plan, Stream stream, int inert_rows_to = 0);

  const DevicePlanView& view() const { return view_; }
  std::uint64_t bytes() const { return device_.bytes(); }

 private:
  struct PinnedRelease {
    DeviceRuntime* runtime;
    void operator()(std::int32_t* memory) const { runtime->release_pinned(memory); }
  };

  DevicePlan(DeviceRuntime& runtime, DeviceAllocation device,
             std::unique_ptr<std::int32_t, PinnedRelease> staging, int max_tokens,
             int max_sequences, int max_blocks_per_sequence, int block_size);

  DeviceRuntime* runtime_;
  DeviceAllocation device_;
  std::unique_ptr<std::int32_t, PinnedRelease> staging_;
  int max_tokens_;
  int max_sequences_;
  int block_size_;
  DevicePlanView view_;
};

}  // namespace tern::engine::cuda
