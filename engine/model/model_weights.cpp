#include "engine/model/model_weights.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "engine/model/prefault.h"
#include "engine/model/random_model.h"

namespace tern::engine {

std::uint64_t ModelWeights::file_bytes() const {
  std::uint64_t total = 0;
  for (const auto& region : mapped_bytes()) total += region.size();
  return total;
}

std::vector<std::span<const std::byte>> ModelWeights::mapped_bytes() const {
  std::vector<std::span<const std::byte>> regions;
  if (gguf_) regions = gguf_->mapped_regions();
  if (safetensors_) {
    for (const SafetensorsFile& file : safetensors_->files()) regions.push_back(file.bytes());
  }
  return regions;
}

Expected<ModelWeights> load_model(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code error;
  const bool is_directory = std::filesystem::is_directory(path, error);
  Expected<ModelWeights> loaded = [&]() -> Expected<ModelWeights> {
    if (is_random_model_spec(path)) {
      Expected<RandomModelSpec> spec = parse_random_model_spec(path);
      if (!spec) return spec.error();
      Expected<GgufFile> gguf = make_random_model_gguf(*spec);
      if (!gguf) return gguf.error();
      return load_gguf_model(std::move(gguf).value());
    }
    if (is_directory) {
      Expected<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::open(path);
      if (!checkpoint) return checkpoint.error();
      return load_hf_model(path, std::move(checkpoint).value());
    }
    Expected<GgufFile> gguf = GgufFile::open(path);
    if (!gguf) return gguf.error();
    return load_gguf_model(std::move(gguf).value());
  }();
  if (!loaded) return loaded;

  const ModelWeights& weights = *loaded;
  const std::vector<std::span<const std::byte>> regions = weights.mapped_bytes();
  prefault(regions, path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ModelConfig& config = weights.config();
  const std::optional<std::uint64_t> resident = resident_memory_bytes();
  const std::string attention =
      config.latent.enabled()
          ? fmt::format("{} heads over a latent of {} + rope {}", config.n_heads,
                        config.latent.kv_lora_rank, config.latent.rope_head_dim)
          : fmt::format("{} heads / {} KV heads", config.n_heads, config.n_kv_heads);
  const std::string experts = config.moe.enabled()
                                  ? fmt::format(", {} experts ({} per token{})",
                                                config.moe.n_experts, config.moe.experts_per_token,
                                                config.moe.shared_expert_ffn > 0 ? ", shared" : "")
                                  : std::string();
  spdlog::info(
      "loaded {} ({}, {}): {} layers, hidden {}, {}{}, vocab {}, context {}; "
      "{:.1f} MiB in {:.2f} s; resident memory {:.1f} MiB",
      path, weights.source_format(), config.architecture, config.n_layers, config.hidden_size,
      attention, experts, config.vocab_size, config.context_length,
      static_cast<double>(weights.file_bytes()) / (1024.0 * 1024.0), seconds,
      resident ? static_cast<double>(*resident) / (1024.0 * 1024.0) : 0.0);
  return loaded;
}

std::vector<const WeightTensor*> layer_tensors(const LayerWeights& layer, bool routed_experts) {
  std::vector<const WeightTensor*> out;
  const auto add = [&out](const WeightTensor& tensor) {
    if (tensor.data != nullptr) out.push_back(&tensor);
  };
  const auto add_optional = [&add](const std::optional<WeightTensor>& tensor) {
    if (tensor) add(*tensor);
  };
  for (const WeightTensor* tensor : {&layer.attn_norm, &layer.wq, &layer.wk, &layer.wv, &layer.wo,
                                     &layer.ffn_norm, &layer.w_gate, &layer.w_up, &layer.w_down}) {
    add(*tensor);
  }
  for (const auto* tensor : {&layer.bq, &layer.bk, &layer.bv, &layer.q_norm, &layer.k_norm}) {
    add_optional(*tensor);
  }
  if (const std::optional<LatentAttentionWeights>& latent = layer.latent) {
    for (const auto* tensor : {&latent->q_a, &latent->q_a_norm, &latent->q_b, &latent->kv_b}) {
      add_optional(*tensor);
    }
    add(latent->kv_a);
    add(latent->kv_a_norm);
    for (const WeightTensor& tensor : latent->k_b) add(tensor);
    if (!latent->kv_b) {
      for (const WeightTensor& tensor : latent->v_b) add(tensor);  // else views of kv_b
    }
  }
  if (const std::optional<ExpertWeights>& experts = layer.experts) {
    add(experts->router);
    for (const auto* tensor : {&experts->selection_bias, &experts->shared_gate, &experts->shared_up,
                               &experts->shared_down}) {
      add_optional(*tensor);
    }
    if (routed_experts) {
      for (const auto* list : {&experts->gate, &experts->up, &experts->down}) {
        for (const WeightTensor& tensor : *list) add(tensor);
      }
    }
  }
  return out;
}

}  // namespace tern::engine
