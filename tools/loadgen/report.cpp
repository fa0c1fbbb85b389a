#include "tools/loadgen/report.h"

#include <fmt/format.h>

#include "engine/json_string.h"

namespace tern::loadgen {
namespace {

std::string json_percentiles(const Percentiles& p) {
  return fmt::format(
      R"({{"count":{},"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"mean":{:.3f},"max":{:.3f}}})",
      p.count, p.p50, p.p90, p.p99, p.mean, p.max);
}

std::string_view endpoint_name(Endpoint endpoint) {
  return endpoint == Endpoint::chat ? "chat" : "completions";
}

std::string json_run(const Options& options, const Summary& s) {
  const RunResult& run = *s.run;
  std::string errors;
  for (const auto& [kind, count] : s.errors_by_kind) {
    errors += fmt::format("{}{}:{}", errors.empty() ? "" : ",", json_string(kind), count);
  }
  std::string health = "null";
  if (run.health) {
    std::string slow;
    for (const auto& [at_s, ms] : run.health->slow) {
      slow += fmt::format("{}[{:.3f},{:.3f}]", slow.empty() ? "" : ",", at_s, ms);
    }
    health = fmt::format(
        R"({{"interval_ms":{},"probes":{},"failures":{},"p50_ms":{:.3f},"p99_ms":{:.3f},"max_ms":{:.3f},"max_at_s":{:.3f},"over_50ms":{},"slow":[{}]}})",
        options.probe_health_ms, run.health->probes, run.health->failures, run.health->p50_ms,
        run.health->p99_ms, run.health->max_ms, run.health->max_at_s, run.health->over_50ms, slow);
  }
  std::string rss = "null";
  if (run.rss) {
    rss = fmt::format(
        R"({{"pid":{},"samples":{},"baseline_kib":{},"peak_kib":{},"per_stream_kib":{:.3f}}})",
        run.rss->pid, run.rss->samples, run.rss->baseline_kib, run.rss->peak_kib,
        run.rss->per_stream_kib);
  }
  std::string out = "{";
  out += fmt::format(R"("tool":"tern-loadgen","mode":{},"url":{},"endpoint":{},"model":{},)",
                     json_string(run.mode),
                     run.mode == "http" ? json_string(options.url) : std::string("null"),
                     json_string(endpoint_name(options.endpoint)), json_string(run.model));
  out += fmt::format(
      R"("concurrency":{},"requests":{},"prompt_words":{},"max_tokens":{},"temperature":{},"ignore_eos":{},"seed":{},)",
      run.concurrency, run.requests, options.prompt_words, options.max_tokens, options.temperature,
      options.ignore_eos, options.seed);
  out += fmt::format(R"("completed":{},"errors":{},"errors_by_kind":{{{}}},)", s.completed,
                     s.errors, errors);
  out += fmt::format(
      R"("duration_s":{:.4f},"requests_per_s":{:.3f},"prompt_tokens":{},"output_tokens":{},"output_tokens_per_s":{:.3f},)",
      run.duration_s, s.requests_per_s, s.prompt_tokens, s.output_tokens, s.output_tokens_per_s);
  out += fmt::format(R"("ttft_ms":{},"itl_ms":{},"e2e_ms":{},)", json_percentiles(s.ttft_ms),
                     json_percentiles(s.itl_ms), json_percentiles(s.e2e_ms));
  out += fmt::format(R"("peak_open_streams":{},"health":{},"rss":{}}})", run.peak_open_streams,
                     health, rss);
  return out;
}

std::string ms(double value) {
  return fmt::format("{:.2f}", value);
}

std::string triple(const Percentiles& p) {
  return fmt::format("{:.1f} / {:.1f} / {:.1f}", p.p50, p.p90, p.p99);
}

}  // namespace

Summary summarize(const RunResult& run) {
  Summary s;
  s.run = &run;
  std::vector<double> ttft;
  std::vector<double> itl;
  std::vector<double> e2e;
  for (const RequestResult& result : run.results) {
    if (!result.error.empty()) {
      ++s.errors;
      ++s.errors_by_kind[result.error];
      continue;
    }
    ++s.completed;
    s.output_tokens += result.completion_tokens;
    s.prompt_tokens += result.prompt_tokens;
    if (result.ttft_ms >= 0) ttft.push_back(result.ttft_ms);
    itl.insert(itl.end(), result.itl_ms.begin(), result.itl_ms.end());
    e2e.push_back(result.e2e_ms);
  }
  if (run.duration_s > 0) {
    s.requests_per_s = s.completed / run.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / run.duration_s;
  }
  s.ttft_ms = percentiles(ttft);
  s.itl_ms = percentiles(itl);
  s.e2e_ms = percentiles(e2e);
  return s;
}

std::string markdown_report(const Summary& s) {
  const RunResult& run = *s.run;
  std::string out = "| metric | value |\n| --- | --- |\n";
  auto row = [&](std::string_view name, const std::string& value) {
    out += fmt::format("| {} | {} |\n", name, value);
  };
  row("mode", run.mode);
  row("model", run.model);
  row("concurrency", std::to_string(run.concurrency));
  row("requests", std::to_string(run.requests));
  row("completed", std::to_string(s.completed));
  std::string errors = std::to_string(s.errors);
  for (const auto& [kind, count] : s.errors_by_kind) errors += fmt::format(" {}={}", kind, count);
  row("errors", errors);
  row("duration s", fmt::format("{:.3f}", run.duration_s));
  row("requests/s", fmt::format("{:.2f}", s.requests_per_s));
  row("output tokens", std::to_string(s.output_tokens));
  row("output tokens/s", fmt::format("{:.1f}", s.output_tokens_per_s));
  row("TTFT ms p50 / p90 / p99", triple(s.ttft_ms));
  row("ITL ms p50 / p90 / p99", triple(s.itl_ms));
  row("e2e ms p50 / p90 / p99", triple(s.e2e_ms));
  row("e2e ms mean", ms(s.e2e_ms.mean));
  row("peak open streams", std::to_string(run.peak_open_streams));
  if (run.health) {
    row("health probes (failed)", fmt::format("{} ({})", run.health->probes, run.health->failures));
    row("health ms p50 / p99 / max", fmt::format("{:.2f} / {:.2f} / {:.2f}", run.health->p50_ms,
                                                 run.health->p99_ms, run.health->max_ms));
    row("health: slowest sent at s / probes over 50 ms",
        fmt::format("{:.2f} / {}", run.health->max_at_s, run.health->over_50ms));
  }
  if (run.rss) {
    row("server RSS KiB baseline / peak",
        fmt::format("{} / {}", run.rss->baseline_kib, run.rss->peak_kib));
    row("server KiB per open stream", fmt::format("{:.1f}", run.rss->per_stream_kib));
  }
  return out;
}

std::string markdown_sweep(const std::vector<Summary>& points) {
  std::string out =
      "| concurrency | requests | completed | errors | duration s | req/s | output tok/s | "
      "TTFT ms p50 / p90 / p99 | ITL ms p50 / p90 / p99 | e2e ms p50 / p90 / p99 | "
      "peak open |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const Summary& s : points) {
    out +=
        fmt::format("| {} | {} | {} | {} | {:.3f} | {:.2f} | {:.1f} | {} | {} | {} | {} |\n",
                    s.run->concurrency, s.run->requests, s.completed, s.errors, s.run->duration_s,
                    s.requests_per_s, s.output_tokens_per_s, triple(s.ttft_ms), triple(s.itl_ms),
                    triple(s.e2e_ms), s.run->peak_open_streams);
  }
  return out;
}

std::string json_report(const Options& options, const Summary& summary) {
  return json_run(options, summary) + "\n";
}

std::string json_sweep(const Options& options, const std::vector<Summary>& points) {
  std::string out = R"({"tool":"tern-loadgen","sweep":[)";
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) out += ",\n";
    out += json_run(options, points[i]);
  }
  return out + "]}\n";
}

}  // namespace tern::loadgen
