#include "service/metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "service/service_metrics.h"

namespace tern::service {
namespace {

TEST(MetricsTest, TextExposition) {
  MetricsRegistry registry;
  auto& requests = registry.counter("t_requests_total", "Requests.", {"model", "status"});
  requests.with({"m\"1", "200"}).increment();
  requests.with({"m\"1", "200"}).increment(2);
  registry.gauge("t_open", "Open\nthings.").with({}).set(1.5);
  auto& latency = registry.histogram("t_latency_seconds", "Latency.", {"model"}, {0.1, 1});
  latency.with({"m"}).observe(0.05);
  latency.with({"m"}).observe(0.5);
  latency.with({"m"}).observe(5);
  EXPECT_EQ(registry.render(),
            "# HELP t_requests_total Requests.\n# TYPE t_requests_total counter\n"
            "t_requests_total{model=\"m\\\"1\",status=\"200\"} 3\n"
            "# HELP t_open Open\\nthings.\n# TYPE t_open gauge\nt_open 1.5\n"
            "# HELP t_latency_seconds Latency.\n# TYPE t_latency_seconds histogram\n"
            "t_latency_seconds_bucket{model=\"m\",le=\"0.1\"} 1\n"
            "t_latency_seconds_bucket{model=\"m\",le=\"1\"} 2\n"
            "t_latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 3\n"
            "t_latency_seconds_sum{model=\"m\"} 5.55\n"
            "t_latency_seconds_count{model=\"m\"} 3\n");
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry registry;
  Counter& counter = registry.counter("c_total", "C.").with({});
  Histogram& histogram = registry.histogram("h", "H.", {}, {1}).with({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.increment();
        histogram.observe(0.5);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000);
  EXPECT_EQ(histogram.snapshot().cumulative_counts.back(), 40000u);
}

// A high-water mark raised from several threads ends at the highest value any of them saw.
TEST(MetricsTest, GaugeRaiseToKeepsTheHighest) {
  MetricsRegistry registry;
  Gauge& peak = registry.gauge("peak_bytes", "P.").with({});
  peak.raise_to(5);
  peak.raise_to(3);
  EXPECT_EQ(peak.value(), 5);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) peak.raise_to(i * 4 + t);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(peak.value(), 9999 * 4 + 3);
}

// A CUDA model's stats: device memory by use, KV bytes, sampling paths.
ModelStats cuda_model_stats() {
  ModelStats stats{"demo", 2, 1, 0.5, 0.25};
  stats.kv_cache_bytes = 3 << 20;
  stats.tokens_sampled_from_candidates = 90;
  stats.tokens_sampled_from_whole_rows = 10;
  stats.logit_rows_fetched = 4;
  stats.grammars_compiled = 3;
  stats.grammar_cache_hits = 7;
  stats.grammars_failed = 1;
  stats.grammars_busy = 2;
  stats.grammar_compiles_running = 2;
  stats.device_memory_total_bytes = 64 << 20;
  stats.kv_bytes_per_token = 160;
  stats.device_memory_bytes = {
      {"weights", 5 << 20}, {"activations", 1 << 20}, {"graphs", 0}, {"kv_cache", 3 << 20}};
  return stats;
}

// The engine's running totals become counters that only move up; device memory is per use.
TEST(MetricsTest, ModelStatsExportDeviceMemoryKvBytesAndSamplingPaths) {
  ServiceMetrics metrics;
  ModelStats stats = cuda_model_stats();
  metrics.update_model_stats({stats});
  stats.tokens_sampled_from_candidates = 95;
  metrics.update_model_stats({stats});
  metrics.update_model_stats({stats});
  const std::string text = metrics.render();
  for (const char* line :
       {"tern_kv_cache_bytes{model=\"demo\"} 3145728",
        "tern_kv_cache_bytes_per_token{model=\"demo\"} 160",
        "tern_sampled_tokens_total{model=\"demo\",path=\"device_candidates\"} 95",
        "tern_sampled_tokens_total{model=\"demo\",path=\"whole_row\"} 10",
        "tern_logit_rows_fetched_total{model=\"demo\"} 4",
        "tern_structured_output_grammars_total{model=\"demo\",outcome=\"compiled\"} 3",
        "tern_structured_output_grammars_total{model=\"demo\",outcome=\"cached\"} 7",
        "tern_structured_output_grammars_total{model=\"demo\",outcome=\"failed\"} 1",
        "tern_structured_output_grammars_total{model=\"demo\",outcome=\"busy\"} 2",
        "tern_structured_output_compiles_running{model=\"demo\"} 2",
        "tern_device_memory_bytes{model=\"demo\",use=\"weights\"} 5242880",
        "tern_device_memory_bytes{model=\"demo\",use=\"kv_cache\"} 3145728",
        "tern_device_memory_total_bytes{model=\"demo\"} 67108864"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // A CPU model has no device memory series.
  ServiceMetrics cpu;
  cpu.update_model_stats({ModelStats{"cpu-model", 0, 0, 0, 0}});
  EXPECT_EQ(cpu.render().find("tern_device_memory_bytes{"), std::string::npos);
}

TEST(MetricsTest, PromtoolAcceptsTheServiceMetrics) {
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh)";
  }
  ServiceMetrics metrics;
  metrics.count_request("demo", "/v1/chat/completions", 200);
  metrics.count_request("", "other", 404);
  auto histograms = metrics.histograms("demo");
  histograms.time_to_first_token.observe(0.2);
  histograms.inter_token_latency.observe(0.02);
  histograms.end_to_end_latency.observe(1.5);
  histograms.prompt_tokens.observe(12);
  histograms.generation_tokens.observe(30);
  metrics.open_connections().add(3);
  metrics.stream_buffered_bytes().add(4096);
  metrics.stream_buffer_peak_bytes().raise_to(4096);
  metrics.count_dropped_stream("demo", "slow_client");
  metrics.update_model_stats({cuda_model_stats()});
  const std::string path = ::testing::TempDir() + "tern_metrics.txt";
  std::ofstream(path) << metrics.render();
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char chunk[256];
  while (const std::size_t n = fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output << "\n" << metrics.render();
  EXPECT_EQ(output, "") << output;
}

}  // namespace
}  // namespace tern::service
