#pragma once

// Sampling from a device's logit candidates (Backend::logit_candidate_count() > 0): what each
// logits row of a step must bring back (its candidates where they may decide, else the whole
// row), the rows' candidates as they came back, and the samples whose candidates did not decide,
// served afterwards from whole rows fetched in one go.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/engine_sequence.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"

namespace tern::engine {

class DeviceCandidates {
 public:
  // `count` candidates a row (0: the backend has none, and every row comes back whole), for at
  // most `max_rows` rows a step of a vocabulary of `vocab` tokens.
  DeviceCandidates(std::int32_t count, std::int32_t max_rows, std::int32_t vocab);

  bool enabled() const { return count_ > 0; }
  std::int32_t count() const { return count_; }

  // Each logits row of the step's plan: what it must bring back. The rows' requests, in order.
  std::span<const LogitRowRequest> ask_for_rows(const SchedulerOutput& output);
  // Where the backend writes the rows' candidates.
  LogitCandidateRows& rows() { return rows_; }

  // Whether row `row` came back whole.
  bool whole(std::int32_t row) const;
  // Row `row`'s candidates, as the backend left them.
  LogitCandidates candidates_of(std::int32_t row) const;

  // A sample whose row must be fetched whole: to choose its token (`token` < 0), or only for
  // the logprobs of `token`, chosen already.
  struct Deferred {
    EngineSequence* sample;
    std::int32_t row;
    std::int32_t token;
  };
  void clear_deferred() { deferred_.clear(); }
  void defer(EngineSequence& sample, std::int32_t row, std::int32_t token);
  std::span<const Deferred> deferred() const { return deferred_; }
  // Fetches the deferred samples' rows whole into `logits` (row r at r * vocab), each once;
  // `fetched` is set to how many rows that was.
  Status fetch_deferred_rows(Backend& backend, std::span<float> logits, std::int64_t& fetched);

 private:
  std::int32_t count_ = 0;
  std::int32_t vocab_ = 0;
  std::vector<LogitRowRequest> row_requests_;
  std::vector<float> values_;
  std::vector<std::int32_t> ids_;
  std::vector<float> log_sum_exp_;
  std::vector<double> scaled_mass_;
  LogitCandidateRows rows_;
  std::vector<Deferred> deferred_;
  std::vector<std::int32_t> fetch_rows_;
};

}  // namespace tern::engine
