#include "service/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tern::service {
namespace {

void append_escaped_label(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void append_escaped_help(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// `name{a="x",b="y"<extra>} value\n`
void append_sample(std::string& out, std::string_view name, const std::vector<std::string>& labels,
                   const std::vector<std::string>& values, std::string_view extra_label,
                   std::string_view extra_value, double value) {
  out += name;
  if (!labels.empty() || !extra_label.empty()) {
    out += '{';
    bool first = true;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (!first) out += ',';
      first = false;
      out += labels[i];
      out += "=\"";
      append_escaped_label(out, values[i]);
      out += '"';
    }
    if (!extra_label.empty()) {
      if (!first) out += ',';
      out += extra_label;
      out += "=\"";
      out += extra_value;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_metric_value(out, value);
  out += '\n';
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void append_metric_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
  }
}

Histogram::Histogram(const std::vector<double>& upper_bounds)
    : upper_bounds_(upper_bounds),
      counts_(std::make_unique<std::atomic<std::uint64_t>[]>(upper_bounds.size() + 1)) {}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value);
  counts_[bucket - upper_bounds_.begin()].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snapshot;
  snapshot.cumulative_counts.resize(upper_bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= upper_bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative_counts[i] = running;
  }
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

template <typename Metric>
Metric& Family<Metric>::with(std::initializer_list<std::string_view> label_values) {
  return find_or_add(std::vector<std::string>(label_values.begin(), label_values.end()));
}

template <typename Metric>
Metric& Family<Metric>::with(const std::vector<std::string>& label_values) {
  return find_or_add(label_values);
}

template <typename Metric>
Metric& Family<Metric>::find_or_add(std::vector<std::string> key) {
  key.resize(label_names_.size());
  std::lock_guard lock(mutex_);
  auto it = children_.find(key);
  if (it == children_.end()) {
    std::unique_ptr<Metric> metric;
    if constexpr (std::is_same_v<Metric, Histogram>) {
      metric = std::make_unique<Histogram>(buckets_);
    } else {
      metric = std::make_unique<Metric>();
    }
    it = children_.emplace(std::move(key), std::move(metric)).first;
  }
  return *it->second;
}

template <typename Metric>
void Family<Metric>::render(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  append_escaped_help(out, help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += type_name(type_);
  out += '\n';
  std::lock_guard lock(mutex_);
  for (const auto& [values, metric] : children_) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const Histogram::Snapshot snapshot = metric->snapshot();
      const std::string bucket_name = name_ + "_bucket";
      for (std::size_t i = 0; i <= buckets_.size(); ++i) {
        std::string bound;
        append_metric_value(bound, i < buckets_.size() ? buckets_[i] : INFINITY);
        append_sample(out, bucket_name, label_names_, values, "le", bound,
                      static_cast<double>(snapshot.cumulative_counts[i]));
      }
      append_sample(out, name_ + "_sum", label_names_, values, "", "", snapshot.sum);
      append_sample(out, name_ + "_count", label_names_, values, "", "",
                    static_cast<double>(snapshot.cumulative_counts.back()));
    } else {
      append_sample(out, name_, label_names_, values, "", "", metric->value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>& MetricsRegistry::counter(std::string name, std::string help,
                                          std::vector<std::string> label_names) {
  std::lock_guard lock(mutex_);
  counters_.emplace_back(new Family<Counter>(std::move(name), std::move(help),
                                             std::move(label_names), MetricType::counter));
  order_.emplace_back(MetricType::counter, counters_.size() - 1);
  return *counters_.back();
}

Family<Gauge>& MetricsRegistry::gauge(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  std::lock_guard lock(mutex_);
  gauges_.emplace_back(new Family<Gauge>(std::move(name), std::move(help), std::move(label_names),
                                         MetricType::gauge));
  order_.emplace_back(MetricType::gauge, gauges_.size() - 1);
  return *gauges_.back();
}

Family<Histogram>& MetricsRegistry::histogram(std::string name, std::string help,
                                              std::vector<std::string> label_names,
                                              std::vector<double> buckets) {
  std::sort(buckets.begin(), buckets.end());
  std::lock_guard lock(mutex_);
  histograms_.emplace_back(new Family<Histogram>(std::move(name), std::move(help),
                                                 std::move(label_names), MetricType::histogram,
                                                 std::move(buckets)));
  order_.emplace_back(MetricType::histogram, histograms_.size() - 1);
  return *histograms_.back();
}

std::string MetricsRegistry::render() const {
  std::string out;
  out.reserve(4096);
  std::lock_guard lock(mutex_);
  for (const auto& [type, index] : order_) {
    switch (type) {
      case MetricType::counter:
        counters_[index]->render(out);
        break;
      case MetricType::gauge:
        gauges_[index]->render(out);
        break;
      case MetricType::histogram:
        histograms_[index]->render(out);
        break;
    }
  }
  return out;
}

}  // namespace tern::service
