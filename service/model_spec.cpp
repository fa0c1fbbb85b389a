#include "service/model_spec.h"

namespace tern::service {
namespace {

engine::KvCacheType kv_cache_type(const std::string& name) {
  if (name == "f32") return engine::KvCacheType::f32;
  if (name == "bf16") return engine::KvCacheType::bf16;
  return engine::KvCacheType::f16;  // the config validated the name
}

}  // namespace

engine::ModelSpec to_model_spec(const ModelConfig& config,
                                const EmulatedDeviceConfig& emulated_device) {
  engine::ModelSpec spec;
  spec.name = config.name;
  spec.path = config.path;
  spec.aliases = config.aliases;
  // The config validated the name.
  const auto backend = engine::parse_backend_kind(config.backend);
  spec.backend = backend ? *backend : engine::BackendKind::cpu;
  spec.devices = config.devices;
  spec.tensor_parallel = config.tensor_parallel;
  if (config.gpu_memory_utilization) {
    spec.cuda.gpu_memory_utilization = *config.gpu_memory_utilization;
  }
  if (config.cuda_graphs) spec.cuda.cuda_graphs = *config.cuda_graphs;
  if (emulated_device.count) spec.emulated_device.devices = *emulated_device.count;
  if (emulated_device.memory_bytes) {
    spec.emulated_device.memory_bytes = *emulated_device.memory_bytes;
  }
  spec.threads = config.threads;
  spec.max_model_len = config.max_model_len;
  spec.max_num_seqs = config.max_num_seqs;
  spec.max_num_batched_tokens = config.max_num_batched_tokens;
  spec.max_waiting_sequences = config.max_waiting_sequences;
  spec.max_sequences_per_request = config.max_sequences_per_request;
  spec.max_waiting_share_per_client = config.max_waiting_share_per_client;
  spec.kv_cache_bytes = config.kv_cache_bytes;
  spec.block_size = config.block_size;
  spec.kv_cache_type = kv_cache_type(config.kv_cache_dtype);
  spec.enable_prefix_caching = config.enable_prefix_caching;
  spec.chat_template = config.chat_template;
  spec.tool_parser = config.tool_parser;
  spec.reasoning_parser = config.reasoning_parser;
  spec.structured_outputs_compile_timeout_ms = config.structured_outputs_compile_timeout_ms;
  spec.structured_outputs_max_concurrent_compiles =
      config.structured_outputs_max_concurrent_compiles;
  spec.structured_outputs_max_mask_work =
      static_cast<std::uint64_t>(config.structured_outputs_max_mask_work);
  spec.required = config.required;
  spec.sampling = config.sampling;
  return spec;
}

}  // namespace tern::service
