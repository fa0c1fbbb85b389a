#include <algorithm>
#include <cmath>

#include "engine/sampler.h"

namespace tern::engine {

std::optional<float> log_probability(const LogitCandidates& row, std::int32_t token,
                                     std::span<TokenLogprob> top) {
  const std::size_t count = row.values.size();
  if (count != row.ids.size() || top.size() > count || !std::isfinite(row.log_sum_exp)) {
    return std::nullopt;
  }
  // NaN ranks first, so values[0] shows whether the row has one.
  if (count > 0 && std::isnan(row.values[0])) return std::nullopt;
  const auto at = std::find(row.ids.begin(), row.ids.end(), token);
  if (at == row.ids.end()) return std::nullopt;
  // The device's order (descending, equal values by lower id) is the full row's for these.
  for (std::size_t i = 0; i < top.size(); ++i) {
    top[i] = {row.ids[i], row.values[i] - row.log_sum_exp};
  }
  return row.values[static_cast<std::size_t>(at - row.ids.begin())] - row.log_sum_exp;
}

}  // namespace tern::engine
