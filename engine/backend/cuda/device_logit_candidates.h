#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// Device-side sampling's half on the device: each logits row summarised as its best
// kMaxLogitCandidates logits and the row-wide sums (engine/logit_candidates.h), so that a row
// crosses to the host whole only when its candidates cannot decide. Buffers are sized once for
// the backend's most rows; a step allocates nothing.
class DeviceLogitCandidates {
 public:
  static Expected<DeviceLogitCandidates> create(DeviceRuntime& runtime, int max_rows, int vocab);

  // Candidates per row: kMaxLogitCandidates, or the whole vocabulary when smaller.
  int count() const { return count_; }

  // Issues on `stream`: the rows' inverse temperatures up (one copy from pinned staging), the
  // top-k and row-sum kernels over the first rows.size() rows of `logits` (device,
  // [rows][vocab]), and the copies of their results into `out`. The caller synchronizes
  // `stream` before reading `out` or issuing again (the staging buffer is reused).
  Status issue(const float* logits, std::span<const LogitRowRequest> rows, LogitCandidateRows& out,
               Stream stream);

  // A tensor-parallel rank's share, `logits` being its vocabulary slice of each row, in two
  // halves around the host's merge of the ranks' row maxima. First the slice's top count()
  // candidates (slice-local ids, best first) into values/ids ([rows][count()]); then, given
  // every row's maximum over the whole row, the slice's parts of the row sums (see
  // launch_logit_row_partial_sums). Same synchronisation rule as issue().
  Status issue_slice_candidates(const float* logits, int rows, std::span<float> values,
                                std::span<std::int32_t> ids, Stream stream);
  Status issue_slice_sums(const float* logits, std::span<const LogitRowRequest> rows,
                          std::span<const float> row_max, std::span<double> exp_sum,
                          std::span<double> scaled_mass, Stream stream);

 private:
  struct PinnedRelease {
    DeviceRuntime* runtime;
    void operator()(float* memory) const { runtime->release_pinned(memory); }
  };

  DeviceLogitCandidates(DeviceRuntime& runtime, DeviceAllocation device,
                        std::unique_ptr<float, PinnedRelease> staging, int max_rows, int vocab);

  DeviceRuntime* runtime_;
  DeviceAllocation device_;
  // [max_rows] inverse temperatures, then [max_rows] row maxima (tensor-parallel ranks)
  std::unique_ptr<float, PinnedRelease> staging_;
  int max_rows_;
  int vocab_;
  int count_;
  float* values_ = nullptr;               // [max_rows][count]
  std::int32_t* ids_ = nullptr;           // [max_rows][count]
  float* log_sum_exp_ = nullptr;          // [max_rows]
  double* scaled_mass_ = nullptr;         // [max_rows]
  float* inverse_temperature_ = nullptr;  // [max_rows]
  float* row_max_ = nullptr;              // [max_rows], a rank's
  double* exp_sum_ = nullptr;             // [max_rows], a rank's
};

}  // namespace tern::engine::cuda
