#pragma once

// One model ready to serve: its weights, tokenizer, chat template, backend and engine, and
// the operator's settings for it. The registry holds one per configured model.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/backend_spec.h"
#include "engine/chat/model_chat_template.h"
#include "engine/engine.h"
#include "engine/expected.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/model/model_weights.h"
#include "engine/sampling_defaults.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

// What to load and how to serve it; independent of the YAML config, so the engine needs no
// service types.
struct ModelSpec {
  std::string name;
  std::string path;
  std::vector<std::string> aliases;
  // The backend's kind, CUDA device ordinals, tensor-parallel ranks and settings, and the
  // emulated machine (read by cuda-emulated only); its sizes follow max_num_seqs,
  // max_num_batched_tokens and the context at load.
  BackendKind backend = BackendKind::cpu;
  std::vector<int> devices;
  int tensor_parallel = 0;  // 0: unset (BackendSpec::tensor_parallel)
  CudaOptions cuda;
  EmulatedDeviceOptions emulated_device;
  int threads = 0;        // compute threads wanted; the shared pool takes the largest ask
  int max_model_len = 0;  // 0: the model's own context length
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  int max_waiting_sequences = 1024;  // prompts x n of every request not yet scheduled
  int max_sequences_per_request = 256;
  double max_waiting_share_per_client = 0.5;
  // Unset: the backend's device budget (Backend::device_kv_budget), or 1 GiB in host memory.
  std::optional<std::uint64_t> kv_cache_bytes;
  int block_size = 16;
  KvCacheType kv_cache_type = KvCacheType::f16;
  bool enable_prefix_caching = true;
  std::string chat_template;  // a Jinja file replacing the model's own; empty for none
  // Output parsers (engine/chat/output_parser.h) by vLLM's names; empty: what the chat template
  // implies; "none": off.
  std::string tool_parser;
  std::string reasoning_parser;
  // A grammar (structured output) that does not compile in this time is refused with a 400.
  int structured_outputs_compile_timeout_ms = 2000;
  // Grammars compiling at once; more wait for a thread within their timeout, or get a 429.
  int structured_outputs_max_concurrent_compiles = 2;
  // What one token of a structured output may cost its grammar (GrammarMatcher's step work).
  std::uint64_t structured_outputs_max_mask_work = kDefaultGrammarStepWork;
  bool required = false;  // a failed load fails the whole registry
  std::string note;       // shown to clients, e.g. that a demo model's text is random
  SamplingDefaults sampling;
};

// Never moves once built: the backend and the engine point into the weights and tokenizer.
struct ServedModel {
  ModelSpec spec;
  std::optional<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ModelChatTemplate> chat_template;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Engine> engine;
  // Structured outputs' grammars, compiled for this model's vocabulary.
  std::unique_ptr<grammar::GrammarCache> grammars;
  std::int32_t context_length = 0;  // what one request may use: prompt + max_tokens
  std::string quantization;         // the main weights' type as llama.cpp names it, e.g. Q8_0
  std::int64_t loaded_at = 0;       // Unix seconds

  ServedModel();
  ~ServedModel();  // the engine stops before the backend it runs on goes away
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;
};

// The backend `spec` names, with the default sizes: load_served_model sets them from the
// model's context, and check_backend_available needs none.
BackendSpec backend_spec_of(const ModelSpec& spec);

// Loads one model onto `pool`, which must outlive it. The error names the path and the reason.
Expected<std::unique_ptr<ServedModel>> load_served_model(const ModelSpec& spec,
                                                         kernels::ThreadPool& pool);

}  // namespace tern::engine
