#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/expected.h"
#include "kernels/kv_type.h"

namespace tern::engine {

class OpObserver;
struct OpTime;

// The kernels' own enum, so a backend hands it over as it is.
using KvCacheType = kernels::KvType;

// How the engine wants one logits row of a forward pass.
struct LogitRowRequest {
  // The whole row comes back; otherwise only its candidates (forward_with_candidates()).
  bool full_row = true;
  // > 0: the row's candidates carry scaled_mass at this inverse temperature.
  float inverse_temperature = 0;
  // Grammar-constrained decoding (engine/grammar/token_mask.h): one bit per token of the
  // vocabulary, bit t % 64 of word t / 64 set = allowed; words past the span count as zero.
  // Empty: none. A backend that applies_token_masks() sets the disallowed logits of this row to
  // -inf on its device before taking its candidates and sums (and a row fetched later is the
  // masked one); any other backend ignores it, and the engine masks whole rows on the host.
  std::span<const std::uint64_t> token_mask;
};

// Where a backend that summarises logits rows on its device puts them: the engine's buffers,
// sized for max_sequences() rows of logit_candidate_count() candidates each.
struct LogitCandidateRows {
  std::span<float> values;                // [row][count], best first (LogitCandidates' order)
  std::span<std::int32_t> ids;            // [row][count]
  std::span<float> log_sum_exp;           // [row]
  std::span<double> scaled_mass;          // [row]: NaN where no inverse temperature was asked
  double scaled_mass_relative_error = 0;  // the backend's bound, set by forward_with_candidates()
};

// What a device backend holds in its device's memory, by use, in bytes.
struct DeviceMemoryUsage {
  std::uint64_t device_total = 0;
  std::uint64_t weights = 0;
  std::uint64_t activations = 0;  // activation buffers, the plan, workspaces, sampling buffers
  std::uint64_t graphs = 0;       // what capturing the decode graphs took
  std::uint64_t kv_cache = 0;
};

struct KvCacheSpec {
  KvCacheType type = KvCacheType::f16;
  std::int32_t block_size = 16;
  std::int32_t num_blocks = 0;
};

// What runs a model's forward pass on one kind of device. The backend owns the weights as the
// device sees them, the KV memory and every activation buffer; the engine owns the policy
// (which tokens run, which KV blocks they use) and hands it over as a BatchPlan.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual std::int32_t vocab_size() const = 0;
  virtual std::int32_t max_batch_tokens() const = 0;
  // The most sequences one forward pass takes: the scheduler may run no more at once.
  virtual std::int32_t max_sequences() const = 0;

  // Bytes one KV block takes across all layers, to size num_blocks from a memory budget.
  virtual std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const = 0;

  // (Re)allocates the KV pools; every block id in later plans must be below spec.num_blocks.
  virtual Status allocate_kv_cache(const KvCacheSpec& spec) = 0;

  // Copies whole KV blocks, in order, in every layer's pools: copy-on-write after a fork.
  virtual Status copy_kv_blocks(std::span<const BlockCopy> copies) = 0;

  // Runs every layer over the plan's tokens, writing K/V at the plan's positions, and writes
  // one row of vocab_size() logits per sequence that wants them, in plan order.
  virtual Status forward(const BatchPlan& plan, std::span<float> logits) = 0;

  // A backend whose KV pool lives in a device's memory sizes it from that memory: the bytes
  // left of the share of the device it may use (gpu_memory_utilization) once weights,
  // activations and the decode graphs are in, the graphs measured by capturing them against a
  // minimal pool of this type. nullopt: host memory, where the engine's kv_cache_bytes decides.
  virtual Expected<std::optional<std::uint64_t>> device_kv_budget(KvCacheType type,
                                                                  std::int32_t block_size);
  // nullopt for a backend in host memory.
  virtual std::optional<DeviceMemoryUsage> device_memory() const { return std::nullopt; }

  // The failure a backend cannot recover from (a tensor-parallel rank lost): every later step
  // fails with it and the model must be reloaded; success while it runs. Any thread may ask.
  virtual Status health() const { return Status::success(); }

  // Bytes of routed-expert weights the last forward pass read (each routed expert once, for all
  // its tokens); 0 for a dense model or a backend that does not count.
  virtual std::uint64_t expert_bytes_read() const { return 0; }

  // Device-side sampling. A backend whose logits live on a device can hand back, per row, its
  // best logits and the row-wide sums (engine/logit_candidates.h) instead of the whole row, so
  // that most rows never cross to the host. 0: it cannot, and the engine asks for full rows.
  virtual std::int32_t logit_candidate_count() const { return 0; }
  // Whether forward_with_candidates() applies LogitRowRequest::token_mask on the device, so a
  // grammar-constrained row's candidates are those of the masked row.
  virtual bool applies_token_masks() const { return false; }

  // As forward(plan, logits), but row r comes back whole (at logits[r * vocab]) only where
  // rows[r].full_row; every row's candidates go to `candidates`. rows.size() is the plan's
  // logits row count.
  virtual Status forward_with_candidates(const BatchPlan& plan,
                                         std::span<const LogitRowRequest> rows,
                                         std::span<float> logits, LogitCandidateRows& candidates);

  // Rows of the last forward pass, whole, each at logits[row * vocab]: for rows whose candidates
  // did not decide. Valid until the next forward pass or KV copy.
  virtual Status fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> logits);

  // A debug aid (engine/backend/op_trace.h): later forward passes show each op's outputs to
  // `observer`, which must outlive them, reading every one back to the host (a device backend
  // then runs every step eagerly and waits after each op); nullptr stops it. An error where the
  // backend cannot.
  virtual Status observe_ops(OpObserver* observer);

  // A benchmark aid (engine/backend/op_timing.h): while `times` is set, each forward pass runs
  // its ops one by one (a device backend without its graphs), takes each op's time on the
  // backend's own clock, and once the pass is done appends them to `times`, which must outlive
  // them; nullptr stops it. Not while observe_ops shows the ops. An error where the backend
  // cannot.
  virtual Status time_ops(std::vector<OpTime>* times);
};

}  // namespace tern::engine
