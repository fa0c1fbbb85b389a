#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "service/metrics.h"
#include "service/model_service.h"

namespace tern::service {

// The metrics the server exports, registered once. Names follow Prometheus conventions
// (base units, _total on counters) so `promtool check metrics` passes.
class ServiceMetrics {
 public:
  ServiceMetrics();

  MetricsRegistry& registry() { return registry_; }

  void count_request(std::string_view model, std::string_view endpoint, int status);

  // A model's latency histograms, looked up once per request and kept for its tokens.
  struct ModelHistograms {
    Histogram& time_to_first_token;
    Histogram& inter_token_latency;
    Histogram& end_to_end_latency;
    Histogram& prompt_tokens;
    Histogram& generation_tokens;
  };
  ModelHistograms histograms(std::string_view model);

  Gauge& open_connections() { return open_connections_; }
  // Bytes produced for streaming clients and not yet sent, over all streams; and the most any
  // one stream has held (bounded by limits.stream_buffer_bytes plus one event).
  Gauge& stream_buffered_bytes() { return stream_buffered_bytes_; }
  Gauge& stream_buffer_peak_bytes() { return stream_buffer_peak_bytes_; }
  // A stream the server ended before its end: `reason` is slow_client or drain_timeout.
  void count_dropped_stream(std::string_view model, std::string_view reason);

  // Copies the engines' gauges in; called just before rendering /metrics.
  // tern_model_load_failed is 1 for a configured model that failed to load, 0 for the others.
  void update_model_stats(const std::vector<ModelStats>& stats,
                          const std::vector<ModelUnavailable>& unavailable = {});

  // The Responses store's size, and its evictions by reason (totals kept by the store); called
  // just before rendering /metrics.
  void update_responses_store(
      std::size_t responses, std::size_t bytes,
      const std::vector<std::pair<std::string_view, std::uint64_t>>& evictions);

  std::string render() const { return registry_.render(); }

 private:
  void update_model_states(const std::vector<ModelStats>& loaded,
                           const std::vector<ModelUnavailable>& unavailable);
  MetricsRegistry registry_;
  Family<Counter>& requests_;
  Family<Histogram>& time_to_first_token_;
  Family<Histogram>& inter_token_latency_;
  Family<Histogram>& end_to_end_latency_;
  Family<Histogram>& prompt_tokens_;
  Family<Histogram>& generation_tokens_;
  Family<Gauge>& running_;
  Family<Gauge>& waiting_;
  Family<Gauge>& kv_cache_usage_;
  Family<Gauge>& prefix_cache_hit_rate_;
  Family<Gauge>& load_failed_;
  Family<Gauge>& kv_cache_bytes_;
  Family<Gauge>& kv_bytes_per_token_;
  Family<Gauge>& healthy_;
  Family<Counter>& sampled_tokens_;
  Family<Counter>& logit_rows_fetched_;
  Family<Counter>& grammars_;
  Family<Gauge>& grammar_compiles_running_;
  Family<Gauge>& device_memory_;
  Family<Gauge>& device_memory_total_;
  Gauge& open_connections_;
  Gauge& stream_buffered_bytes_;
  Gauge& stream_buffer_peak_bytes_;
  Family<Counter>& streams_dropped_;
  Gauge& responses_stored_;
  Gauge& responses_stored_bytes_;
  Family<Counter>& responses_evicted_;
};

}  // namespace tern::service
