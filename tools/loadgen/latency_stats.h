#pragma once

// Percentiles of a latency sample, by nearest rank.
#include <vector>

namespace tern::loadgen {

struct Percentiles {
  int count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double mean = 0;
  double max = 0;
};

// Sorts `values` in place. All zero when it is empty.
Percentiles percentiles(std::vector<double>& values);

// The nearest-rank q-quantile (0 < q <= 1) of sorted values; 0 when empty.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace tern::loadgen
