#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tern::kernels {

// How a mixture-of-experts layer turns its router's logits into experts and weights, as Hugging
// Face transformers computes it for Mixtral and Qwen3-MoE (softmax) and DeepSeek-V3 (sigmoid,
// topk_method noaux_tc).
struct MoeRouting {
  enum class Scoring { softmax, sigmoid };
  Scoring scoring = Scoring::softmax;
  int n_experts = 0;
  int experts_per_token = 0;      // top-k
  bool normalize_weights = true;  // renormalise the selected weights to sum 1
  int n_groups = 1;               // DeepSeek-V3 group-limited routing (n_group); 1 = off
  int groups_per_token = 1;       // topk_group
  float weight_scale = 1.0f;      // routed_scaling_factor, applied last
};

// Why `routing` cannot be routed with, naming the field; nullopt when it can. route_token assumes
// a routing that passed this check and checks nothing itself.
std::optional<std::string> validate(const MoeRouting& routing);

// Scratch floats route_token needs: sized once by the caller (0 for softmax scoring, where any
// pointer, nullptr included, may be passed).
std::size_t moe_router_scratch_floats(const MoeRouting& routing);

// One token: `logits` are the router's n_experts outputs; `selection_bias` (nullptr when absent)
// is DeepSeek's e_score_correction_bias, added for selection only. Writes experts_per_token expert
// indices and weights, ordered by selection score descending, ties by lower expert index.
// Allocates nothing; the result depends only on logits and selection_bias, never on what scratch
// held. A NaN score is ranked below every number.
//
// softmax: selects by logit (softmax is monotonic, so this is the top-k of the probabilities with
// no ties invented by float rounding); weights are the selected probabilities, divided by their
// sum when normalize_weights. selection_bias is ignored.
// sigmoid: choice = sigmoid(logit) + bias. With n_groups > 1 a group (n_experts / n_groups
// consecutive experts) scores the sum of its two largest choices, and only the experts of the
// groups_per_token best groups compete. Weights are the unbiased sigmoids of the selected experts,
// divided by (their sum + 1e-20) when normalize_weights.
// Both then multiply the weights by weight_scale.
void route_token(const MoeRouting& routing, const float* logits, const float* selection_bias,
                 std::int32_t* experts, float* weights, float* scratch);

}  // namespace tern::kernels
