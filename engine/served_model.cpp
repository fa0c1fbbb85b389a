#include "engine/served_model.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

ServedModel::ServedModel() = default;

ServedModel::~ServedModel() {
  if (engine) engine->stop(Engine::StopMode::cancel);
  engine.reset();
  backend.reset();
}

namespace {

std::string describe(const ModelSpec& spec, std::string_view reason) {
  return fmt::format("model '{}' ({}): {}", spec.name, spec.path, reason);
}

constexpr std::uint64_t kDefaultHostKvBytes = 1ull << 30;

// The KV budget. An explicit kv_cache_bytes wins; otherwise a device backend gives what its
// gpu_memory_utilization leaves (as vLLM sizes it: the rest goes to the prefix cache), and in
// host memory 1 GiB. Explicit or host bytes are capped at what every sequence at full context
// needs, so that a small model does not reserve a gigabyte it can never use.
Expected<std::uint64_t> kv_budget(const ModelSpec& spec, Backend& backend, std::int32_t context) {
  const std::uint64_t block_bytes = backend.kv_block_bytes(spec.kv_cache_type, spec.block_size);
  const auto blocks_per_sequence =
      static_cast<std::uint64_t>((context + spec.block_size - 1) / spec.block_size);
  const std::uint64_t full =
      block_bytes * blocks_per_sequence * static_cast<std::uint64_t>(spec.max_num_seqs);
  if (spec.kv_cache_bytes) return std::min(*spec.kv_cache_bytes, full);
  auto device = backend.device_kv_budget(spec.kv_cache_type, spec.block_size);
  if (!device) return device.error();
  if (*device) return **device;
  return std::min(kDefaultHostKvBytes, full);
}

}  // namespace

BackendSpec backend_spec_of(const ModelSpec& spec) {
  BackendSpec backend;
  backend.kind = spec.backend;
  backend.devices = spec.devices;
  backend.tensor_parallel = spec.tensor_parallel;
  backend.cuda = spec.cuda;
  backend.emulated = spec.emulated_device;
  return backend;
}

Expected<std::unique_ptr<ServedModel>> load_served_model(const ModelSpec& spec,
                                                         kernels::ThreadPool& pool) {
  if (spec.max_num_seqs < 1 || spec.max_num_batched_tokens < 1 || spec.block_size < 1) {
    return Error{describe(spec, "max_num_seqs, max_num_batched_tokens and block_size must be > 0")};
  }
  if (is_cuda(spec.backend) && spec.kv_cache_type == KvCacheType::f32) {
    return Error{describe(spec, fmt::format("kv_cache_dtype f32 is not supported by backend {}: "
                                            "its kernels take f16 and bf16",
                                            to_string(spec.backend)))};
  }
  // Before reading gigabytes of weights for a backend this machine cannot run.
  if (Status available = check_backend_available(backend_spec_of(spec)); !available.ok()) {
    return Error{describe(spec, available.message())};
  }
  auto served = std::make_unique<ServedModel>();
  served->spec = spec;
  auto weights = load_model(spec.path);
  if (!weights) return Error{describe(spec, weights.error().message)};
  served->weights.emplace(std::move(*weights));
  const ModelConfig& config = served->weights->config();

  auto tokenizer = served->weights->gguf() != nullptr
                       ? Tokenizer::from_gguf(*served->weights->gguf())
                       : Tokenizer::load(spec.path);
  if (!tokenizer) return Error{describe(spec, tokenizer.error().message)};
  served->tokenizer = std::move(*tokenizer);
  auto chat_template = ModelChatTemplate::load(*served->tokenizer, spec.chat_template);
  if (!chat_template) return Error{describe(spec, chat_template.error().message)};
  served->chat_template.emplace(std::move(*chat_template));
  // The tokenizer never moves (see ServedModel), so the vocabulary may be made from it later.
  served->grammars = std::make_unique<grammar::GrammarCache>(
      [tokenizer = served->tokenizer.get(), size = config.vocab_size, eos = config.eos_token_ids] {
        return grammar::TokenVocabulary::from_tokenizer(*tokenizer, size, eos);
      },
      grammar::CompileOptions{
          std::chrono::milliseconds(spec.structured_outputs_compile_timeout_ms),
          static_cast<std::size_t>(std::max(spec.structured_outputs_max_concurrent_compiles, 1)),
          // Compiles run no higher than the engine: at its nice value, which is the pool's.
          pool.worker_nice()});

  if (spec.max_model_len > config.context_length) {
    return Error{describe(spec, fmt::format("max_model_len {} exceeds the model's context of {}",
                                            spec.max_model_len, config.context_length))};
  }
  served->context_length = spec.max_model_len > 0 ? spec.max_model_len : config.context_length;

  BackendSpec backend_spec = backend_spec_of(spec);
  // The engine never runs more sequences in one pass than it may hold running.
  backend_spec.options.max_sequences = spec.max_num_seqs;
  backend_spec.options.max_batch_tokens = std::max(spec.max_num_batched_tokens, spec.max_num_seqs);
  backend_spec.options.max_context = served->context_length;
  auto backend = create_backend(backend_spec, *served->weights, pool);
  if (!backend) return Error{describe(spec, backend.error().message)};
  served->backend = std::move(*backend);

  EngineOptions options;
  options.context_length = served->context_length;
  options.eos_token_ids.assign(config.eos_token_ids.begin(), config.eos_token_ids.end());
  options.kv_cache_type = spec.kv_cache_type;
  options.block_size = spec.block_size;
  auto kv_bytes = kv_budget(spec, *served->backend, served->context_length);
  if (!kv_bytes) return Error{describe(spec, kv_bytes.error().message)};
  options.kv_cache_bytes = *kv_bytes;
  options.enable_prefix_caching = spec.enable_prefix_caching;
  options.thread_nice = pool.worker_nice();  // it joins the pool's loops
  options.grammar_step_work = spec.structured_outputs_max_mask_work;
  options.scheduler.max_num_seqs = spec.max_num_seqs;
  options.scheduler.max_num_batched_tokens = spec.max_num_batched_tokens;
  options.admission.max_waiting_sequences = spec.max_waiting_sequences;
  options.admission.max_sequences_per_request = spec.max_sequences_per_request;
  options.admission.max_waiting_share_per_client = spec.max_waiting_share_per_client;
  options.submit_queue_capacity = std::max<std::size_t>(
      options.submit_queue_capacity, static_cast<std::size_t>(spec.max_waiting_sequences) + 16);
  auto engine = Engine::create(*served->backend, served->tokenizer.get(), options);
  if (!engine) return Error{describe(spec, engine.error().message)};
  served->engine = std::move(*engine);

  const auto layers = served->weights->layers();
  served->quantization = std::string(kernels::tensor_type_name(
      layers.empty() ? served->weights->token_embedding().type : layers.front().wq.type));
  served->loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return served;
}

}  // namespace tern::engine
