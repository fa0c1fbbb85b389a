#pragma once

// The seam between HTTP and the engines: the server calls this interface and never an engine
// directly. The lead's implementation wraps the model registry; tests use a fake.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "service/api/api_error.h"
#include "service/api/chat_request.h"
#include "service/api/completion_request.h"
#include "service/api/tokenize_request.h"
#include "service/generation_stream.h"

namespace tern::service {

// One entry of /v1/models: every configured model and every alias gets one.
struct ModelCard {
  std::string id;            // the name or alias a client sends as `model`
  std::string root;          // the configured model's own name (equal to id when not an alias)
  std::int64_t created = 0;  // load time, Unix seconds
  int context_length = 0;
  std::string architecture;  // e.g. llama
  std::string quantization;  // e.g. Q8_0, bf16
  std::string note;          // e.g. "demo model: random weights, random text"; empty for none
  std::string error;         // why the model no longer serves (Backend::health); empty if it does
};

// Gauges that /metrics reports per configured model; read when /metrics is scraped.
struct ModelStats {
  std::string model;
  int running_requests = 0;
  int waiting_requests = 0;
  double kv_cache_usage = 0;         // 0..1
  double prefix_cache_hit_rate = 0;  // 0..1, over the model's lifetime
  std::uint64_t kv_cache_bytes = 0;
  std::uint64_t kv_bytes_per_token = 0;
  bool healthy = true;  // Backend::health: false once the model must be reloaded
  // Tokens sampled from a device's top candidates and from whole logits rows, and rows fetched
  // whole after their candidates could not decide (device-side sampling, docs/gpu.md).
  std::int64_t tokens_sampled_from_candidates = 0;
  std::int64_t tokens_sampled_from_whole_rows = 0;
  std::int64_t logit_rows_fetched = 0;
  // Structured outputs' grammars: compiled, served from the cache, refused (bad or too slow).
  std::int64_t grammars_compiled = 0;
  std::int64_t grammar_cache_hits = 0;
  std::int64_t grammars_failed = 0;
  std::int64_t grammars_busy = 0;  // 429: the compile threads stayed busy past the timeout
  std::int64_t grammar_compiles_running = 0;
  // A device backend's memory by use ("weights", "activations", "graphs", "kv_cache") and the
  // device's total; empty on the CPU.
  std::vector<std::pair<std::string, std::uint64_t>> device_memory_bytes;
  std::uint64_t device_memory_total_bytes = 0;
};

// A configured model that is not serving: still loading, or failed to load (see the log).
struct ModelUnavailable {
  std::string id;
  bool failed = false;  // false: still loading
};

struct TokenizeResult {
  std::vector<std::int32_t> tokens;
  std::vector<std::string> token_strs;  // filled only when return_token_strs
  int max_model_len = 0;
};

struct DetokenizeResult {
  std::string prompt;
};

// Everything here may block for a while (template rendering, tokenizing a long prompt), so the
// server calls these on its preparation pool, never on an I/O thread. Implementations must be
// thread-safe. Errors are client-facing: 404 model_not_found for an unknown model, 400
// context_length_exceeded, 429 with retry_after_s when the model's waiting queue is full.
class ModelService {
 public:
  virtual ~ModelService() = default;

  virtual std::vector<ModelCard> models() const = 0;
  virtual std::vector<ModelStats> stats() const = 0;
  // True once loading finished, every required model and at least one model loaded; the
  // server adds its own draining state.
  virtual bool ready() const = 0;
  // Configured models that are not serving, for /metrics and /v1/models.
  virtual std::vector<ModelUnavailable> unavailable() const { return {}; }

  // Resolves the model (empty means the default), renders and tokenizes the prompt, checks it
  // against the context and queues it. `model_id` receives the name to echo in responses.
  // Choices are numbered prompt * n + i; with `echo`, a completion's first delta per choice is
  // its prompt text. Stop strings are trimmed by the implementation, not by the server.
  virtual api::ApiResult<std::unique_ptr<GenerationStream>> start_chat(
      const api::ChatRequest& request, std::string& model_id) = 0;
  virtual api::ApiResult<std::unique_ptr<GenerationStream>> start_completion(
      const api::CompletionRequest& request, std::string& model_id) = 0;

  // Counts up to the model's context length; a longer text is 400 context_length_exceeded.
  virtual api::ApiResult<TokenizeResult> tokenize(const api::TokenizeRequest& request) = 0;
  virtual api::ApiResult<DetokenizeResult> detokenize(const api::DetokenizeRequest& request) = 0;
};

}  // namespace tern::service
