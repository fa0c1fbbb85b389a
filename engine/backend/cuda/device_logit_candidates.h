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
  // `vocab` columns per row, starting at column `vocab_offset` of a `whole_vocab` vocabulary (a
  // tensor-parallel rank's slice; 0 and vocab for a whole row): the token masks are the whole
  // vocabulary's.
  static Expected<DeviceLogitCandidates> create(DeviceRuntime& runtime, int max_rows, int vocab,
                                                int whole_vocab, int vocab_offset);

  // Candidates per row: kMaxLogitCandidates, or the whole vocabulary when smaller.
  int count() const { return count_; }

  // Issues on `stream`: the rows' inverse temperatures up (one copy from pinned staging), the
  // top-k and row-sum kernels over the first rows.size() rows of `logits` (device,
  // [rows][vocab]), and the copies of their results into `out`. The caller synchronizes
  // `stream` before reading `out` or issuing again (the staging buffer is reused).
  Status issue(const float* logits, std::span<const LogitRowRequest> rows, LogitCandidateRows& out,
               Stream stream);

  // Grammar-constrained rows, before their candidates are taken: issues on `stream` one copy of
  // the token masks of the rows that have one (LogitRowRequest::token_mask) from pinned staging,
  // and the kernel that sets their disallowed logits to -inf in place in `logits` (device,
  // [logit_rows][vocab]). Rows without a mask are untouched; with no mask, nothing is issued.
  // Same synchronisation rule as issue().
  Status issue_token_masks(float* logits, int logit_rows, std::span<const LogitRowRequest> rows,
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
    void operator()(void* memory) const { runtime->release_pinned(memory); }
  };

  DeviceLogitCandidates(DeviceRuntime& runtime, DeviceAllocation device,
                        std::unique_ptr<float, PinnedRelease> staging,
                        std::unique_ptr<unsigned char, PinnedRelease> mask_staging, int max_rows,
                        int vocab, int whole_vocab, int vocab_offset);

  DeviceRuntime* runtime_;
  DeviceAllocation device_;
  // [max_rows] inverse temperatures, then [max_rows] row maxima (tensor-parallel ranks)
  std::unique_ptr<float, PinnedRelease> staging_;
  // The token masks' section as it goes up: [max_rows] row indices, then the masks.
  std::unique_ptr<unsigned char, PinnedRelease> mask_staging_;
  int max_rows_;
  int vocab_;
  int count_;
  int vocab_offset_;                      // the vocabulary index of the rows' first column
  std::int64_t mask_words_ = 0;           // per mask: the whole vocabulary's
  std::uint64_t mask_rows_bytes_ = 0;     // the row indices' part of the section, aligned
  std::int32_t* mask_rows_ = nullptr;     // [max_rows]: the row each uploaded mask is for
  std::uint64_t* token_masks_ = nullptr;  // [max_rows][mask_words]
  float* values_ = nullptr;               // [max_rows][count]
  std::int32_t* ids_ = nullptr;           // [max_rows][count]
  float* log_sum_exp_ = nullptr;          // [max_rows]
  double* scaled_mass_ = nullptr;         // [max_rows]
  float* inverse_temperature_ = nullptr;  // [max_rows]
  float* row_max_ = nullptr;              // [max_rows], a rank's
  double* exp_sum_ = nullptr;             // [max_rows], a rank's
};

}  // namespace tern::engine::cuda
