#include "engine/backend/backend.h"

#include <fmt/format.h>

namespace tern::engine {

Expected<std::optional<std::uint64_t>> Backend::device_kv_budget(KvCacheType /*type*/,
                                                                 std::int32_t /*block_size*/) {
  return std::optional<std::uint64_t>{};
}

// A backend without device-side candidates returns every row whole.
Status Backend::forward_with_candidates(const BatchPlan& plan,
                                        std::span<const LogitRowRequest> /*rows*/,
                                        std::span<float> logits,
                                        LogitCandidateRows& /*candidates*/) {
  return forward(plan, logits);
}

Status Backend::fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> /*logits*/) {
  if (rows.empty()) return Status::success();
  return Error{fmt::format("the {} backend returns whole rows; it has none to fetch", name())};
}

Status Backend::time_ops(std::vector<OpTime>* times) {
  if (times == nullptr) return Status::success();
  return Error{fmt::format("the {} backend cannot time its ops", name())};
}

Status Backend::observe_ops(OpObserver* observer) {
  if (observer == nullptr) return Status::success();
  return Error{fmt::format("the {} backend cannot show its ops", name())};
}

}  // namespace tern::engine
