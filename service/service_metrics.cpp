#include "service/service_metrics.h"

#include <charconv>

namespace tern::service {
namespace {

const std::vector<double> kLatencyBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08,
                                             0.1,   0.25,  0.5,  0.75, 1.0,  2.5,  5.0,
                                             7.5,   10.0,  20.0, 40.0, 80.0, 160.0};
const std::vector<double> kTokenBuckets = {1,    8,    16,   32,   64,    128,   256,   512,
                                           1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};

// A counter that mirrors a total kept elsewhere (the engine's): it moves up to it.
void advance_to(Counter& counter, std::int64_t total) {
  const double behind = static_cast<double>(total) - counter.value();
  if (behind > 0) counter.increment(behind);
}

}  // namespace

ServiceMetrics::ServiceMetrics()
    : requests_(registry_.counter("tern_requests_total",
                                  "HTTP requests by model, endpoint and status code.",
                                  {"model", "endpoint", "status"})),
      time_to_first_token_(registry_.histogram("tern_time_to_first_token_seconds",
                                               "Time from request arrival to the first token.",
                                               {"model"}, kLatencyBuckets)),
      inter_token_latency_(registry_.histogram("tern_inter_token_latency_seconds",
                                               "Time between consecutive streamed tokens.",
                                               {"model"}, kLatencyBuckets)),
      end_to_end_latency_(registry_.histogram("tern_request_duration_seconds",
                                              "Time from request arrival to its last byte.",
                                              {"model"}, kLatencyBuckets)),
      prompt_tokens_(registry_.histogram("tern_request_prompt_tokens",
                                         "Prompt length of finished requests, in tokens.",
                                         {"model"}, kTokenBuckets)),
      generation_tokens_(registry_.histogram("tern_request_generation_tokens",
                                             "Generated length of finished requests, in tokens.",
                                             {"model"}, kTokenBuckets)),
      running_(registry_.gauge("tern_requests_running", "Requests in the engine's running batch.",
                               {"model"})),
      waiting_(
          registry_.gauge("tern_requests_waiting", "Requests queued for the engine.", {"model"})),
      kv_cache_usage_(registry_.gauge("tern_kv_cache_usage_ratio",
                                      "Fraction of KV-cache blocks in use (0 to 1).", {"model"})),
      prefix_cache_hit_rate_(registry_.gauge("tern_prefix_cache_hit_ratio",
                                             "Fraction of prompt tokens served from the prefix "
                                             "cache (0 to 1).",
                                             {"model"})),
      load_failed_(registry_.gauge("tern_model_load_failed",
                                   "1 for a configured model that failed to load, else 0.",
                                   {"model"})),
      kv_cache_bytes_(registry_.gauge(
          "tern_kv_cache_bytes", "Memory of the paged KV cache, all layers, in bytes.", {"model"})),
      kv_bytes_per_token_(registry_.gauge("tern_kv_cache_bytes_per_token",
                                          "KV cache bytes one token takes in all layers: K and V, "
                                          "or a latent-attention model's one latent row.",
                                          {"model"})),
      healthy_(registry_.gauge("tern_model_healthy",
                               "1 while a loaded model serves, 0 once it must be reloaded (a "
                               "tensor-parallel rank failed).",
                               {"model"})),
      sampled_tokens_(registry_.counter(
          "tern_sampled_tokens_total",
          "Tokens sampled, by where from: device_candidates (the device's top candidates of the "
          "row) or whole_row (the full logits row on the host).",
          {"model", "path"})),
      logit_rows_fetched_(registry_.counter(
          "tern_logit_rows_fetched_total",
          "Logits rows fetched whole after their device candidates could not decide.", {"model"})),
      grammars_(registry_.counter(
          "tern_structured_output_grammars_total",
          "Structured-output grammars asked for, by outcome: compiled, cached (a cache hit), "
          "failed (a 400: invalid, unwritable with the vocabulary, or past the compile timeout) "
          "or busy (a 429: every compile thread stayed busy past the timeout).",
          {"model", "outcome"})),
      grammar_compiles_running_(registry_.gauge(
          "tern_structured_output_compiles_running",
          "Structured-output grammars compiling now (at most "
          "structured_outputs_max_concurrent_compiles per model).",
          {"model"})),
      device_memory_(registry_.gauge(
          "tern_device_memory_bytes",
          "Device memory a CUDA model holds, by use (weights, activations, graphs, kv_cache).",
          {"model", "use"})),
      device_memory_total_(registry_.gauge("tern_device_memory_total_bytes",
                                           "Total memory of the device a CUDA model runs on.",
                                           {"model"})),
      open_connections_(
          registry_.gauge("tern_open_connections", "Open HTTP connections.").with({})),
      stream_buffered_bytes_(registry_
                                 .gauge("tern_stream_buffered_bytes",
                                        "Bytes produced for streaming clients and not yet sent, "
                                        "over all streams.")
                                 .with({})),
      stream_buffer_peak_bytes_(registry_
                                    .gauge("tern_stream_buffer_peak_bytes",
                                           "The most bytes one stream has held for its client "
                                           "since the server started.")
                                    .with({})),
      streams_dropped_(registry_.counter(
          "tern_streams_dropped_total",
          "Streams the server ended early, by model and reason (slow_client, drain_timeout).",
          {"model", "reason"})),
      responses_stored_(registry_
                            .gauge("tern_responses_store_entries",
                                   "Responses kept for previous_response_id and GET "
                                   "/v1/responses/{id}.")
                            .with({})),
      responses_stored_bytes_(
          registry_
              .gauge("tern_responses_store_bytes",
                     "Memory of the stored responses, with those that left the store but are "
                     "still referred to by a later response or a running request.")
              .with({})),
      responses_evicted_(registry_.counter(
          "tern_responses_store_evictions_total",
          "Stored responses dropped, by reason: expired (ttl_s), max_responses, max_bytes, "
          "key_share (the key passed max_share_per_key) or too_large (never kept: the "
          "conversation alone passed the key's share).",
          {"reason"})) {}

void ServiceMetrics::update_responses_store(
    std::size_t responses, std::size_t bytes,
    const std::vector<std::pair<std::string_view, std::uint64_t>>& evictions) {
  responses_stored_.set(static_cast<double>(responses));
  responses_stored_bytes_.set(static_cast<double>(bytes));
  for (const auto& [reason, total] : evictions) {
    advance_to(responses_evicted_.with({reason}), static_cast<std::int64_t>(total));
  }
}

void ServiceMetrics::count_dropped_stream(std::string_view model, std::string_view reason) {
  streams_dropped_.with({model, reason}).increment();
}

void ServiceMetrics::count_request(std::string_view model, std::string_view endpoint, int status) {
  char digits[8];
  const auto end = std::to_chars(digits, digits + sizeof digits, status).ptr;
  requests_.with({model, endpoint, std::string_view(digits, end - digits)}).increment();
}

ServiceMetrics::ModelHistograms ServiceMetrics::histograms(std::string_view model) {
  return {time_to_first_token_.with({model}), inter_token_latency_.with({model}),
          end_to_end_latency_.with({model}), prompt_tokens_.with({model}),
          generation_tokens_.with({model})};
}

void ServiceMetrics::update_model_stats(const std::vector<ModelStats>& stats,
                                        const std::vector<ModelUnavailable>& unavailable) {
  update_model_states(stats, unavailable);
  for (const ModelStats& model : stats) {
    running_.with({model.model}).set(model.running_requests);
    waiting_.with({model.model}).set(model.waiting_requests);
    kv_cache_usage_.with({model.model}).set(model.kv_cache_usage);
    prefix_cache_hit_rate_.with({model.model}).set(model.prefix_cache_hit_rate);
    kv_cache_bytes_.with({model.model}).set(static_cast<double>(model.kv_cache_bytes));
    kv_bytes_per_token_.with({model.model}).set(static_cast<double>(model.kv_bytes_per_token));
    healthy_.with({model.model}).set(model.healthy ? 1 : 0);
    advance_to(sampled_tokens_.with({model.model, "device_candidates"}),
               model.tokens_sampled_from_candidates);
    advance_to(sampled_tokens_.with({model.model, "whole_row"}),
               model.tokens_sampled_from_whole_rows);
    advance_to(logit_rows_fetched_.with({model.model}), model.logit_rows_fetched);
    advance_to(grammars_.with({model.model, "compiled"}), model.grammars_compiled);
    advance_to(grammars_.with({model.model, "cached"}), model.grammar_cache_hits);
    advance_to(grammars_.with({model.model, "failed"}), model.grammars_failed);
    advance_to(grammars_.with({model.model, "busy"}), model.grammars_busy);
    grammar_compiles_running_.with({model.model})
        .set(static_cast<double>(model.grammar_compiles_running));
    if (!model.device_memory_bytes.empty()) {
      device_memory_total_.with({model.model})
          .set(static_cast<double>(model.device_memory_total_bytes));
    }
    for (const auto& [use, bytes] : model.device_memory_bytes) {
      device_memory_.with({model.model, use}).set(static_cast<double>(bytes));
    }
  }
}

void ServiceMetrics::update_model_states(const std::vector<ModelStats>& loaded,
                                         const std::vector<ModelUnavailable>& unavailable) {
  for (const ModelStats& model : loaded) load_failed_.with({model.model}).set(0);
  for (const ModelUnavailable& model : unavailable) {
    load_failed_.with({model.id}).set(model.failed ? 1 : 0);
  }
}

}  // namespace tern::service
