#include "tools/loadgen/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tern::loadgen {

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

Percentiles percentiles(std::vector<double>& values) {
  Percentiles result;
  if (values.empty()) return result;
  std::sort(values.begin(), values.end());
  result.count = static_cast<int>(values.size());
  result.p50 = quantile(values, 0.50);
  result.p90 = quantile(values, 0.90);
  result.p99 = quantile(values, 0.99);
  result.mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  result.max = values.back();
  return result;
}

}  // namespace tern::loadgen
