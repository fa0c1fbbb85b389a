// The mixture-of-experts ops of CpuBatchOps: the router and the grouped expert FFN.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/backend/cpu/cpu_batch_ops.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {

kernels::MoeRouting CpuBatchOps::routing_of(const MoeConfig& moe) {
  return kernels::MoeRouting{moe.scoring == MoeConfig::Scoring::sigmoid
                                 ? kernels::MoeRouting::Scoring::sigmoid
                                 : kernels::MoeRouting::Scoring::softmax,
                             moe.n_experts,
                             moe.experts_per_token,
                             moe.normalize_weights,
                             moe.n_groups,
                             moe.groups_per_token,
                             moe.weight_scale};
}

void CpuBatchOps::allocate_expert_buffers() {
  routing_ = routing_of(weights_.config().moe);
  const auto tokens = static_cast<std::size_t>(buffers_.max_tokens);
  const auto hidden = static_cast<std::size_t>(shape_.hidden);
  const auto slots = tokens * static_cast<std::size_t>(shape_.experts_per_token);
  const auto expert_ffn = static_cast<std::size_t>(shape_.expert_ffn);
  const auto shared_ffn = static_cast<std::size_t>(shape_.shared_expert_ffn);
  router_logits_.resize(tokens * static_cast<std::size_t>(shape_.n_experts));
  router_scratch_.resize(std::max<std::size_t>(1, kernels::moe_router_scratch_floats(routing_)));
  token_experts_.resize(slots);
  token_weights_.resize(slots);
  token_slots_.resize(slots);
  slot_tokens_.resize(slots);
  expert_offsets_.resize(static_cast<std::size_t>(shape_.n_experts) + 1);
  expert_cursor_.resize(static_cast<std::size_t>(shape_.n_experts));
  // A group of experts takes at most a batch's worth of rows (expert_ffn groups them so).
  expert_in_.resize(tokens * hidden);
  expert_gate_.resize(tokens * expert_ffn);
  expert_up_.resize(tokens * expert_ffn);
  expert_out_.resize(slots * hidden);
  shared_gate_.resize(tokens * shared_ffn);
  shared_up_.resize(tokens * shared_ffn);
  shared_out_.resize(tokens * hidden);
}

void CpuBatchOps::route_experts(std::int32_t layer, Activation logits) {
  const std::int64_t tokens = rows(logits);
  const std::int64_t k = shape_.experts_per_token;
  const std::int64_t n_experts = shape_.n_experts;
  const std::vector<float>& bias = tables_.layers[static_cast<std::size_t>(layer)].selection_bias;
  const float* scores = data(logits);
  for (std::int64_t t = 0; t < tokens; ++t) {
    kernels::route_token(routing_, scores + t * n_experts, bias.empty() ? nullptr : bias.data(),
                         &token_experts_[static_cast<std::size_t>(t * k)],
                         &token_weights_[static_cast<std::size_t>(t * k)], router_scratch_.data());
  }
  // Group the (token, expert) pairs by expert, tokens in batch order within each expert.
  std::fill(expert_offsets_.begin(), expert_offsets_.end(), 0);
  const std::int64_t pairs = tokens * k;
  for (std::int64_t i = 0; i < pairs; ++i) {
    ++expert_offsets_[static_cast<std::size_t>(token_experts_[static_cast<std::size_t>(i)]) + 1];
  }
  for (std::size_t e = 0; e < expert_cursor_.size(); ++e) {
    expert_offsets_[e + 1] += expert_offsets_[e];
    expert_cursor_[e] = expert_offsets_[e];
  }
  for (std::int64_t i = 0; i < pairs; ++i) {
    const auto expert = static_cast<std::size_t>(token_experts_[static_cast<std::size_t>(i)]);
    const std::int32_t slot = expert_cursor_[expert]++;
    token_slots_[static_cast<std::size_t>(i)] = slot;
    slot_tokens_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(i / k);
  }
}

void CpuBatchOps::expert_ffn(std::int32_t layer, Activation in, Activation out) {
  const ExpertMatrices& experts = experts_[static_cast<std::size_t>(layer)];
  const std::int64_t tokens = rows(in);
  const std::int64_t hidden = shape_.hidden;
  const std::int64_t ffn = shape_.expert_ffn;
  const std::int64_t k = shape_.experts_per_token;
  const float* input = data(in);
  const std::size_t n_experts = expert_cursor_.size();
  // Experts run in groups, each group's gate/up and down products as one pool job apiece: at
  // B = 1 a layer's experts cost two jobs, not three per expert. A group holds at most a batch's
  // worth of rows (the size of the expert buffers) and 32 experts.
  constexpr std::size_t kGroupExperts = 32;
  std::array<kernels::MatmulProblem, 2 * kGroupExperts> gate_up{};
  std::array<kernels::MatmulProblem, kGroupExperts> down{};
  for (std::size_t e = 0; e < n_experts;) {
    std::size_t group = 0;
    std::int64_t group_rows = 0;
    for (; e < n_experts; ++e) {
      const std::int32_t first = expert_offsets_[e];
      const std::int64_t count = expert_offsets_[e + 1] - first;
      if (count == 0) continue;
      if (group == kGroupExperts || group_rows + count > buffers_.max_tokens) break;
      // An expert every token chose reads the batch's rows in place (at B = 1, every expert):
      // the group then quantizes them once. Others gather their tokens' rows.
      const float* x = input;
      if (count != tokens) {
        float* gathered = &expert_in_[static_cast<std::size_t>(group_rows * hidden)];
        for (std::int64_t i = 0; i < count; ++i) {
          const std::int64_t token = slot_tokens_[static_cast<std::size_t>(first + i)];
          std::memcpy(gathered + i * hidden, input + token * hidden,
                      sizeof(float) * static_cast<std::size_t>(hidden));
        }
        x = gathered;
      }
      float* gate = &expert_gate_[static_cast<std::size_t>(group_rows * ffn)];
      float* up = &expert_up_[static_cast<std::size_t>(group_rows * ffn)];
      gate_up[2 * group] = {&experts.gate[e], x, count, hidden, gate, ffn};
      gate_up[2 * group + 1] = {&experts.up[e], x, count, hidden, up, ffn};
      down[group] = {&experts.down[e],
                     gate,
                     count,
                     ffn,
                     &expert_out_[static_cast<std::size_t>(first * hidden)],
                     hidden};
      for (const kernels::WeightMatrix* matrix :
           {&experts.gate[e], &experts.up[e], &experts.down[e]}) {
        expert_bytes_read_ += static_cast<std::uint64_t>(matrix->rows) * matrix->row_bytes;
      }
      group_rows += count;
      ++group;
    }
    if (group == 0) break;
    // The expert matmuls are the dense kernels, whose per-row arithmetic does not depend on how
    // many rows share the call: a token's result is the same alone or in a crowd.
    kernels::matmul_grouped(std::span(gate_up.data(), 2 * group), workspace_, pool_);
    // A decode step's few rows are less work than waking the pool.
    constexpr std::int64_t kInlineValues = 16 * 1024;
    const std::int64_t values = group_rows * ffn;
    if (values <= kInlineValues) {
      kernels::silu_mul(expert_gate_.data(), expert_up_.data(), expert_gate_.data(), values);
    } else {
      pool_.parallel_for(group_rows, [&](std::int64_t begin, std::int64_t end) {
        kernels::silu_mul(&expert_gate_[static_cast<std::size_t>(begin * ffn)],
                          &expert_up_[static_cast<std::size_t>(begin * ffn)],
                          &expert_gate_[static_cast<std::size_t>(begin * ffn)],
                          (end - begin) * ffn);
      });
    }
    kernels::matmul_grouped(std::span(down.data(), group), workspace_, pool_);
  }
  // Each token's experts summed in the router's order, the same whatever else is in the batch.
  float* output = data(out);
  pool_.parallel_for(tokens, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      float* row = output + t * hidden;
      for (std::int64_t j = 0; j < k; ++j) {
        const auto pair = static_cast<std::size_t>(t * k + j);
        const float weight = token_weights_[pair];
        const float* expert_row = &expert_out_[static_cast<std::size_t>(token_slots_[pair]) *
                                               static_cast<std::size_t>(hidden)];
        if (j == 0) {
          for (std::int64_t i = 0; i < hidden; ++i) row[i] = weight * expert_row[i];
        } else {
          for (std::int64_t i = 0; i < hidden; ++i) row[i] += weight * expert_row[i];
        }
      }
    }
  });
}

}  // namespace tern::engine
