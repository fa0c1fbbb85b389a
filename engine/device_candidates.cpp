#include "engine/device_candidates.h"

#include <algorithm>

namespace tern::engine {

DeviceCandidates::DeviceCandidates(std::int32_t count, std::int32_t max_rows, std::int32_t vocab)
    : count_(count), vocab_(vocab) {
  if (count_ <= 0) return;
  const auto rows = static_cast<std::size_t>(max_rows);
  const auto per_row = static_cast<std::size_t>(count_);
  row_requests_.resize(rows);
  values_.resize(rows * per_row);
  ids_.resize(rows * per_row);
  log_sum_exp_.resize(rows);
  scaled_mass_.resize(rows);
  rows_ = {values_, ids_, log_sum_exp_, scaled_mass_, 0};
  deferred_.reserve(2 * rows);
  fetch_rows_.reserve(rows);
}

std::span<const LogitRowRequest> DeviceCandidates::ask_for_rows(const SchedulerOutput& output) {
  std::size_t row = 0;
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    if (!output.plan.sequences[i].wants_logits) continue;
    auto& sample = static_cast<EngineSequence&>(*output.scheduled[i]);
    LogitRowRequest& request = row_requests_[row++];
    request = LogitRowRequest{};
    if (sample.finished) {
      request.full_row = false;  // nobody reads it
      continue;
    }
    // Before an n > 1 request forks, its other samples draw from this row alike: the same
    // parameters, nothing generated yet.
    if (sample.generation->sample_path(sample.num_generated_tokens(), count_) ==
        SamplePath::kCandidates) {
      request.full_row = false;
      request.inverse_temperature = sample.generation->inverse_temperature();
      // A constrained row is masked on the device before its candidates are taken.
      request.token_mask = sample.generation->device_token_mask();
    }
  }
  return std::span<const LogitRowRequest>(row_requests_).first(row);
}

bool DeviceCandidates::whole(std::int32_t row) const {
  return count_ == 0 || row_requests_[static_cast<std::size_t>(row)].full_row;
}

LogitCandidates DeviceCandidates::candidates_of(std::int32_t row) const {
  const auto count = static_cast<std::size_t>(count_);
  const auto r = static_cast<std::size_t>(row);
  LogitCandidates candidates;
  candidates.values = std::span<const float>(values_).subspan(r * count, count);
  candidates.ids = std::span<const std::int32_t>(ids_).subspan(r * count, count);
  candidates.vocab = vocab_;
  candidates.scaled_mass = scaled_mass_[r];
  candidates.scaled_mass_relative_error = rows_.scaled_mass_relative_error;
  candidates.log_sum_exp = log_sum_exp_[r];
  return candidates;
}

void DeviceCandidates::defer(EngineSequence& sample, std::int32_t row, std::int32_t token) {
  deferred_.push_back({&sample, row, token});
}

Status DeviceCandidates::fetch_deferred_rows(Backend& backend, std::span<float> logits,
                                             std::int64_t& fetched) {
  fetch_rows_.clear();
  for (const Deferred& waiting : deferred_) {
    if (std::ranges::find(fetch_rows_, waiting.row) == fetch_rows_.end()) {
      fetch_rows_.push_back(waiting.row);
    }
  }
  fetched = static_cast<std::int64_t>(fetch_rows_.size());
  return backend.fetch_logit_rows(fetch_rows_, logits);
}

}  // namespace tern::engine
