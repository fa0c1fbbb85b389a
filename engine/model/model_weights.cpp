#include "engine/model/model_weights.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "engine/model/prefault.h"

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
  spdlog::info(
      "loaded {} ({}, {}): {} layers, hidden {}, {} heads / {} KV heads, vocab {}, context {}; "
      "{:.1f} MiB in {:.2f} s; resident memory {:.1f} MiB",
      path, weights.source_format(), config.architecture, config.n_layers, config.hidden_size,
      config.n_heads, config.n_kv_heads, config.vocab_size, config.context_length,
      static_cast<double>(weights.file_bytes()) / (1024.0 * 1024.0), seconds,
      resident ? static_cast<double>(*resident) / (1024.0 * 1024.0) : 0.0);
  return loaded;
}

}  // namespace tern::engine
