#pragma once

// Time per op of a forward pass: a benchmark aid (`tern bench --op-profile`), to see where a
// step's time goes on the backend's own clock. The pass runs over TimedBatchOps, which marks the
// backend's timeline before and after each op of the real op table (a device backend records an
// event on its stream, the CPU backend, whose ops are done when they return, reads the clock); once
// the pass is done the backend turns each op's two marks into its seconds. A device backend runs
// a timed step eagerly, without its graphs, so each op is a separate launch and the gaps between
// ops show as time no op took.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/expected.h"

namespace tern::engine {

// One op of a forward pass and its time from the mark before it to the mark after it.
struct OpTime {
  std::string op;          // the BatchOps member: "matmul", "rms_norm", ...
  std::string operand;     // its weights ("wq+wk+wv" for a group) or vector, or empty
  std::int32_t layer = 0;  // kNoLayer for embed and the output head
  double seconds = 0;
  static constexpr std::int32_t kNoLayer = -1;
};

// Marks on a backend's timeline, numbered from 0 within a pass.
class OpMarks {
 public:
  virtual ~OpMarks() = default;
  // Marks the point after the ops issued so far.
  virtual void mark(std::size_t index) = 0;
  // Seconds from mark `from` to mark `to`, once the ops between them are done.
  virtual Expected<double> seconds_between(std::size_t from, std::size_t to) = 0;
};

// OpMarks on the host's clock, for a backend whose ops are done when they return.
class ClockOpMarks final : public OpMarks {
 public:
  void mark(std::size_t index) override;
  Expected<double> seconds_between(std::size_t from, std::size_t to) override;

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

// The op table a timed forward pass runs over: each op of `inner` between marks 2i and 2i + 1,
// listed in `ops()` in order with its seconds left at 0 for the backend to fill in.
class TimedBatchOps final : public BatchOps {
 public:
  // Both must outlive the object.
  TimedBatchOps(BatchOps& inner, OpMarks& marks) : inner_(inner), marks_(marks) {}

  std::vector<OpTime>& ops() { return ops_; }

  void embed(Activation out) override;
  void rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                std::int32_t rows_per_token, std::int32_t width, Activation out) override;
  void matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) override;
  void add_bias(VectorRef bias, Activation rows) override;
  void rope(Activation rows, std::int32_t heads) override;
  void store_kv(std::int32_t layer, Activation k, Activation v) override;
  void paged_attention(std::int32_t layer, Activation q, Activation out) override;
  void add(Activation into, Activation from) override;
  void silu_mul(Activation gate, Activation up, Activation out) override;
  void gather_logit_rows(Activation from, Activation to) override;
  void all_reduce(Activation rows) override;
  void route_experts(std::int32_t layer, Activation logits) override;
  void expert_ffn(std::int32_t layer, Activation in, Activation out) override;
  void store_latent_kv(std::int32_t layer, Activation latent) override;
  void latent_attention(std::int32_t layer, Activation q, Activation out) override;

 private:
  // Runs `run` between the next two marks and lists it.
  template <class Run>
  void timed(std::string_view op, std::string operand, Run&& run);

  BatchOps& inner_;
  OpMarks& marks_;
  std::int32_t layer_ = OpTime::kNoLayer;  // of the last op that named one
  std::vector<OpTime> ops_;
};

// Sets the seconds of each op of a timed pass, op i from mark 2i to mark 2i + 1, and appends
// them to `out`; the pass must be done.
Status add_op_times(TimedBatchOps& pass, OpMarks& marks, std::vector<OpTime>& out);

}  // namespace tern::engine
