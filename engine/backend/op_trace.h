#pragma once

// A debug aid: each op of a forward pass and the activations it wrote, copied to the host, so
// that two backends running the same plans can be compared op by op (the CUDA backend against
// the CPU backend: tests/unit/engine/cuda/cuda_op_trace_test.cpp). A backend traces only while an
// observer is set (Backend::observe_ops); without one it runs its graph over its own op table,
// so the aid costs nothing when off.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/expected.h"

namespace tern::engine {

std::string_view activation_name(Activation activation);
std::string_view matrix_name(Matrix matrix);
std::string_view vector_name(Vector vector);

// An activation of the current forward pass as the host sees it: [rows][width].
struct HostActivation {
  std::int64_t rows = 0;
  std::int64_t width = 0;
  std::vector<float> values;
};

// What an op table offers to read its activations back.
class ActivationReader {
 public:
  virtual ~ActivationReader() = default;
  // The activation as the ops issued so far leave it; a device backend waits for them.
  virtual Status read_activation(Activation activation, HostActivation& out) = 0;
};

// One activation one op wrote. An op that writes several (a matmul group; an rms_norm that adds
// the residual into its input first) gives one event for each, in the order it wrote them.
struct OpEvent {
  std::int32_t index = 0;    // the event's place in the forward pass, from 0
  std::string_view op;       // the BatchOps member: "matmul", "rms_norm", ...
  std::string_view operand;  // the weight it applied ("wq", "attn_norm"), or empty
  // The layer the op belongs to; kNoLayer for embed and the output head (output_norm, output).
  std::int32_t layer = 0;
  Activation output = Activation::x;
  std::optional<Activation> input;  // what a matmul multiplied
  static constexpr std::int32_t kNoLayer = -1;
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // After each op's event, with the activation it wrote.
  virtual void after_op(const OpEvent& event, const HostActivation& output) = 0;
};

// The op table a traced forward pass runs over: each op runs on `inner`, then its outputs are
// read back through `reader` and shown to `observer`. store_kv, route_experts and store_latent_kv
// write no activation and show nothing.
class ObservedBatchOps final : public BatchOps {
 public:
  // All three must outlive the object.
  ObservedBatchOps(BatchOps& inner, ActivationReader& reader, OpObserver& observer)
      : inner_(inner), reader_(reader), observer_(observer) {}

  // The first failure to read an activation back, or success.
  const Status& status() const { return status_; }

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
  void show(std::string_view op, std::string_view operand, Activation output,
            std::optional<Activation> input = std::nullopt);

  BatchOps& inner_;
  ActivationReader& reader_;
  OpObserver& observer_;
  std::int32_t layer_ = OpEvent::kNoLayer;  // of the last op that named one
  std::int32_t events_ = 0;
  HostActivation scratch_;
  Status status_;
};

}  // namespace tern::engine
