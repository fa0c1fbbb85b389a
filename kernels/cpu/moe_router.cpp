#include "kernels/cpu/moe_router.h"

#include <cmath>
#include <limits>

namespace tern::kernels {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// NaN compares false both ways, which would make the ranking depend on scan order; as -inf it
// ranks below every number and the order stays total.
float rank_key(float score) {
  return std::isnan(score) ? kMinusInfinity : score;
}

float sigmoid(float logit) {
  return 1.0f / (1.0f + expf(-logit));
}

// The k best candidates so far, keys descending, in caller-provided arrays (the output arrays
// themselves, so selection needs no scratch). Candidates must be offered in increasing index
// order: a newcomer goes behind every kept key it does not exceed, so equal keys keep the lower
// index first, both inside the top k and at its boundary.
class TopK {
 public:
  TopK(float* keys, std::int32_t* indices, int k) : keys_(keys), indices_(indices), k_(k) {}

  void offer(float key, int index) {
    if (count_ == k_) {
      if (!(key > keys_[k_ - 1])) return;
      --count_;
    }
    int slot = count_;
    for (; slot > 0 && key > keys_[slot - 1]; --slot) {
      keys_[slot] = keys_[slot - 1];
      indices_[slot] = indices_[slot - 1];
    }
    keys_[slot] = key;
    indices_[slot] = static_cast<std::int32_t>(index);
    ++count_;
  }

 private:
  float* keys_;
  std::int32_t* indices_;
  int k_;
  int count_ = 0;
};

void route_softmax(const MoeRouting& routing, const float* logits, std::int32_t* experts,
                   float* weights) {
  const int k = routing.experts_per_token;
  // Softmax is monotonic: ranking the logits ranks the probabilities, without the ties that
  // rounding (or underflow to 0) of the probabilities would invent.
  TopK top(weights, experts, k);
  for (int e = 0; e < routing.n_experts; ++e) top.offer(rank_key(logits[e]), e);
  const float maximum = weights[0];

  double selected_sum = 0;
  for (int i = 0; i < k; ++i) {
    weights[i] = expf(logits[experts[i]] - maximum);
    selected_sum += weights[i];
  }
  double divisor = selected_sum;
  if (!routing.normalize_weights) {
    divisor = 0;
    for (int e = 0; e < routing.n_experts; ++e) divisor += expf(logits[e] - maximum);
  }
  const double scale = routing.weight_scale / divisor;
  for (int i = 0; i < k; ++i) weights[i] = static_cast<float>(weights[i] * scale);
}

// Group-limited routing: marks the groups_per_token best groups (ranked by the sum of their two
// largest choices, ties to the lower group) by setting their score in group_score to NaN, which
// no computed score is (rank_key). Repeated arg-max: groups_per_token * n_groups steps.
void keep_best_groups(const MoeRouting& routing, const float* choice, float* group_score) {
  const int group_size = routing.n_experts / routing.n_groups;
  for (int g = 0; g < routing.n_groups; ++g) {
    const float* member = choice + g * group_size;
    float first = member[0];
    float second = kMinusInfinity;
    for (int i = 1; i < group_size; ++i) {
      if (member[i] > first) {
        second = first;
        first = member[i];
      } else if (member[i] > second) {
        second = member[i];
      }
    }
    group_score[g] = group_size == 1 ? first : rank_key(first + second);
  }
  for (int kept = 0; kept < routing.groups_per_token; ++kept) {
    int best = -1;
    for (int g = 0; g < routing.n_groups; ++g) {
      if (std::isnan(group_score[g])) continue;
      if (best < 0 || group_score[g] > group_score[best]) best = g;
    }
    group_score[best] = std::numeric_limits<float>::quiet_NaN();
  }
}

void route_sigmoid(const MoeRouting& routing, const float* logits, const float* selection_bias,
                   std::int32_t* experts, float* weights, float* scratch) {
  const int n = routing.n_experts;
  const int k = routing.experts_per_token;
  float* choice = scratch;
  for (int e = 0; e < n; ++e) {
    const float score = sigmoid(logits[e]);
    choice[e] = rank_key(selection_bias != nullptr ? score + selection_bias[e] : score);
  }

  TopK top(weights, experts, k);
  if (routing.n_groups > 1) {
    float* group_score = scratch + n;
    keep_best_groups(routing, choice, group_score);
    const int group_size = n / routing.n_groups;
    for (int g = 0; g < routing.n_groups; ++g) {
      if (!std::isnan(group_score[g])) continue;
      for (int e = g * group_size; e < (g + 1) * group_size; ++e) top.offer(choice[e], e);
    }
  } else {
    for (int e = 0; e < n; ++e) top.offer(choice[e], e);
  }

  // The weights are the unbiased scores: the bias only steers the selection.
  double sum = 0;
  for (int i = 0; i < k; ++i) {
    weights[i] = sigmoid(logits[experts[i]]);
    sum += weights[i];
  }
  const double scale =
      routing.normalize_weights ? routing.weight_scale / (sum + 1e-20) : routing.weight_scale;
  for (int i = 0; i < k; ++i) weights[i] = static_cast<float>(weights[i] * scale);
}

}  // namespace

std::optional<std::string> validate(const MoeRouting& routing) {
  const auto text = [](auto value) { return std::to_string(value); };
  if (routing.n_experts < 1) return "n_experts must be at least 1, got " + text(routing.n_experts);
  if (routing.experts_per_token < 1 || routing.experts_per_token > routing.n_experts) {
    return "experts_per_token must be between 1 and n_experts (" + text(routing.n_experts) +
           "), got " + text(routing.experts_per_token);
  }
  if (routing.n_groups < 1) return "n_groups must be at least 1, got " + text(routing.n_groups);
  if (routing.n_experts % routing.n_groups != 0) {
    return "n_groups (" + text(routing.n_groups) + ") must divide n_experts (" +
           text(routing.n_experts) + ")";
  }
  if (routing.n_groups > 1 && routing.scoring != MoeRouting::Scoring::sigmoid) {
    return "n_groups must be 1 with softmax scoring (group-limited routing is DeepSeek-V3's, with "
           "sigmoid scoring), got " +
           text(routing.n_groups);
  }
  if (routing.groups_per_token < 1 || routing.groups_per_token > routing.n_groups) {
    return "groups_per_token must be between 1 and n_groups (" + text(routing.n_groups) +
           "), got " + text(routing.groups_per_token);
  }
  const int group_size = routing.n_experts / routing.n_groups;
  if (routing.groups_per_token * group_size < routing.experts_per_token) {
    return "groups_per_token (" + text(routing.groups_per_token) + ") groups of " +
           text(group_size) + " experts hold fewer than experts_per_token (" +
           text(routing.experts_per_token) + ")";
  }
  if (!std::isfinite(routing.weight_scale)) {
    return "weight_scale must be finite, got " + text(routing.weight_scale);
  }
  return std::nullopt;
}

std::size_t moe_router_scratch_floats(const MoeRouting& routing) {
  if (routing.scoring == MoeRouting::Scoring::softmax) return 0;
  return static_cast<std::size_t>(routing.n_experts) + static_cast<std::size_t>(routing.n_groups);
}

void route_token(const MoeRouting& routing, const float* logits, const float* selection_bias,
                 std::int32_t* experts, float* weights, float* scratch) {
  if (routing.scoring == MoeRouting::Scoring::softmax) {
    route_softmax(routing, logits, experts, weights);
  } else {
    route_sigmoid(routing, logits, selection_bias, experts, weights, scratch);
  }
}

}  // namespace tern::kernels
