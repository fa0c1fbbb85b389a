#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tern::service {

// Prometheus metrics and their text exposition format (version 0.0.4). Updating a metric is one
// or two relaxed atomics; looking a labelled child up takes a lock, so hot paths look it up once
// (per request) and keep the reference, which stays valid for the registry's lifetime.

class Counter {
 public:
  void increment(double amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  // Sets the value to `value` if that is higher: a high-water mark that several threads raise.
  void raise_to(double value) {
    double current = value_.load(std::memory_order_relaxed);
    while (current < value &&
           !value_.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
    }
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `upper_bounds` ascending; +Inf is implied.
  explicit Histogram(const std::vector<double>& upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<std::uint64_t> cumulative_counts;  // one per bound, then +Inf
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double>& upper_bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
};

enum class MetricType { counter, gauge, histogram };

// One metric name with its help text, label names and one child per label-value tuple.
template <typename Metric>
class Family {
 public:
  // Label values in the order of the family's label names.
  Metric& with(std::initializer_list<std::string_view> label_values);
  Metric& with(const std::vector<std::string>& label_values);

 private:
  friend class MetricsRegistry;
  Family(std::string name, std::string help, std::vector<std::string> label_names, MetricType type,
         std::vector<double> buckets = {})
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        type_(type),
        buckets_(std::move(buckets)) {}
  Metric& find_or_add(std::vector<std::string> key);
  void render(std::string& out) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  MetricType type_;
  std::vector<double> buckets_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;
};

class MetricsRegistry {
 public:
  Family<Counter>& counter(std::string name, std::string help,
                           std::vector<std::string> label_names = {});
  Family<Gauge>& gauge(std::string name, std::string help,
                       std::vector<std::string> label_names = {});
  Family<Histogram>& histogram(std::string name, std::string help,
                               std::vector<std::string> label_names, std::vector<double> buckets);

  // The whole registry in the text exposition format, families in registration order.
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family<Counter>>> counters_;
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_;
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;
  // Registration order across the three kinds: (kind, index).
  std::vector<std::pair<MetricType, std::size_t>> order_;
};

// Appends a sample value as Prometheus writes it: shortest round-trip text, +Inf, -Inf, NaN.
void append_metric_value(std::string& out, double value);

}  // namespace tern::service
