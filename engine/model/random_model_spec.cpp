#include "engine/model/random_model_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace tern::engine {
namespace {

constexpr std::string_view kPrefix = "random:";
constexpr std::string_view kExample = "random:llama-3-8b:q4_0";

// The GPT-2 vocabulary's size: the shapes ../shared/tools/make_gguf.py makes take their
// vocabulary from ../shared/vocab/ggml-vocab-gpt-2.gguf, so theirs is this.
constexpr int kGpt2Vocab = 50257;

// A new shape is one more row. The llama-110m ... moe-1.4b-a0.3b rows have the numbers of
// make_gguf.py's `random` shapes (the benchmark models of docs/benchmarks.md and
// ../shared/reference/llamacpp.md), so a random model here has their shapes exactly.
constexpr std::array kShapes{
    RandomModelShape{.name = "tiny",
                     .about = "a few MB, for tests and the emulated device",
                     .hidden = 128,
                     .layers = 2,
                     .heads = 4,
                     .kv_heads = 2,
                     .head_dim = 32,
                     .ffn = 256,
                     .vocab = 512,
                     .context = 1024},
    RandomModelShape{.name = "tiny-moe",
                     .about = "tiny with 4 experts, 2 per token (Mixtral's layout), for tests",
                     .hidden = 128,
                     .layers = 2,
                     .heads = 4,
                     .kv_heads = 2,
                     .head_dim = 32,
                     .ffn = 128,
                     .vocab = 512,
                     .context = 1024,
                     .experts = {.count = 4, .used = 2, .ffn = 128}},
    RandomModelShape{.name = "tiny-mla",
                     .about = "tiny with DeepSeek-V3's latent attention and routing, for tests",
                     .hidden = 128,
                     .layers = 2,
                     .heads = 4,
                     .kv_heads = 4,
                     .head_dim = 48,
                     .ffn = 256,
                     .vocab = 512,
                     .context = 1024,
                     .rms_norm_eps = 1e-6f,
                     .experts = {.count = 8,
                                 .used = 2,
                                 .ffn = 64,
                                 .shared = 1,
                                 .leading_dense = 1,
                                 .groups = 4,
                                 .groups_used = 2,
                                 .sigmoid_scores = true,
                                 .weight_scale = 2.5f},
                     .latent = {.q_lora = 64, .kv_lora = 64, .rope = 16, .nope = 32, .value = 32}},
    RandomModelShape{.name = "llama-110m",
                     .about = "make_gguf.py's llama-110m",
                     .hidden = 768,
                     .layers = 12,
                     .heads = 12,
                     .kv_heads = 12,
                     .head_dim = 64,
                     .ffn = 2048,
                     .vocab = kGpt2Vocab,
                     .context = 4096,
                     .rope_theta = 500000.0f},
    RandomModelShape{.name = "moe-1.4b-a0.3b",
                     .about = "make_gguf.py's Mixtral-style MoE: 32 experts, 4 per token",
                     .hidden = 1024,
                     .layers = 16,
                     .heads = 16,
                     .kv_heads = 4,
                     .head_dim = 64,
                     .ffn = 768,
                     .vocab = kGpt2Vocab,
                     .context = 4096,
                     .rope_theta = 500000.0f,
                     .experts = {.count = 32, .used = 4, .ffn = 768}},
    RandomModelShape{.name = "llama-1b",
                     .about = "make_gguf.py's llama-1b (Llama 3.2 1B's layers)",
                     .hidden = 2048,
                     .layers = 16,
                     .heads = 32,
                     .kv_heads = 8,
                     .head_dim = 64,
                     .ffn = 8192,
                     .vocab = kGpt2Vocab,
                     .context = 4096,
                     .rope_theta = 500000.0f},
    RandomModelShape{.name = "llama-3b",
                     .about = "make_gguf.py's llama-3b (Llama 3.2 3B's layers)",
                     .hidden = 3072,
                     .layers = 28,
                     .heads = 24,
                     .kv_heads = 8,
                     .head_dim = 128,
                     .ffn = 8192,
                     .vocab = kGpt2Vocab,
                     .context = 4096,
                     .rope_theta = 500000.0f},
    RandomModelShape{.name = "llama-3-8b",
                     .about = "Llama 3 8B",
                     .hidden = 4096,
                     .layers = 32,
                     .heads = 32,
                     .kv_heads = 8,
                     .head_dim = 128,
                     .ffn = 14336,
                     .vocab = 128256,
                     .context = 8192,
                     .rope_theta = 500000.0f},
    RandomModelShape{
        .name = "deepseek-v3-lite",
        .about = "DeepSeek-V3's latent attention (with query LoRA) and routing "
                 "(sigmoid, 8 groups) at DeepSeek-V2-Lite's size: 15.9B, 2.8B active",
        .hidden = 2048,
        .layers = 27,
        .heads = 16,
        .kv_heads = 16,
        .head_dim = 192,
        .ffn = 10944,
        .vocab = 129280,
        .context = 4096,
        .rms_norm_eps = 1e-6f,
        .experts = {.count = 64,
                    .used = 6,
                    .ffn = 1408,
                    .shared = 2,
                    .leading_dense = 1,
                    .groups = 8,
                    .groups_used = 4,
                    .sigmoid_scores = true,
                    .weight_scale = 2.5f},
        .latent = {.q_lora = 1536, .kv_lora = 512, .rope = 64, .nope = 128, .value = 128}},
    RandomModelShape{.name = "mixtral-8x7b",
                     .about = "Mixtral 8x7B: 8 experts, 2 per token",
                     .hidden = 4096,
                     .layers = 32,
                     .heads = 32,
                     .kv_heads = 8,
                     .head_dim = 128,
                     .ffn = 14336,
                     .vocab = 32000,
                     .context = 32768,
                     .rope_theta = 1000000.0f,
                     .experts = {.count = 8, .used = 2, .ffn = 14336}},
};

constexpr std::array kTypes{kernels::TensorType::f32, kernels::TensorType::f16,
                            kernels::TensorType::bf16, kernels::TensorType::q8_0,
                            kernels::TensorType::q4_0};

std::string known_shapes() {
  std::string out;
  for (const RandomModelShape& shape : kShapes) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", shape.name);
  }
  return out;
}

std::string known_types() {
  std::string out;
  for (const kernels::TensorType type : kTypes) {
    std::string name(kernels::tensor_type_name(type));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += fmt::format("{}{}", out.empty() ? "" : ", ", name);
  }
  return out;
}

}  // namespace

std::span<const RandomModelShape> random_model_shapes() {
  return kShapes;
}

const RandomModelShape* find_random_model_shape(std::string_view name) {
  for (const RandomModelShape& shape : kShapes) {
    if (shape.name == name) return &shape;
  }
  return nullptr;
}

std::span<const kernels::TensorType> random_model_types() {
  return kTypes;
}

std::uint64_t parameter_count(const RandomModelShape& shape) {
  const std::uint64_t hidden = static_cast<std::uint64_t>(shape.hidden);
  const std::uint64_t heads = static_cast<std::uint64_t>(shape.heads);
  // Embedding and output projection (untied), the final norm.
  std::uint64_t total = 2 * static_cast<std::uint64_t>(shape.vocab) * hidden + hidden;
  for (int layer = 0; layer < shape.layers; ++layer) {
    total += 2 * hidden;  // attention and FFN norms
    const RandomLatentShape& latent = shape.latent;
    if (latent.kv_lora > 0) {
      const std::uint64_t query = heads * static_cast<std::uint64_t>(latent.nope + latent.rope);
      const std::uint64_t q_lora = static_cast<std::uint64_t>(latent.q_lora);
      total += q_lora > 0 ? q_lora * hidden + q_lora + query * q_lora : query * hidden;
      const std::uint64_t kv_lora = static_cast<std::uint64_t>(latent.kv_lora);
      total += (kv_lora + static_cast<std::uint64_t>(latent.rope)) * hidden + kv_lora;
      total += heads * static_cast<std::uint64_t>(latent.nope + latent.value) * kv_lora;
      total += hidden * heads * static_cast<std::uint64_t>(latent.value);
    } else {
      const std::uint64_t head_dim = static_cast<std::uint64_t>(shape.head_dim);
      const std::uint64_t kv = static_cast<std::uint64_t>(shape.kv_heads) * head_dim;
      total += 2 * heads * head_dim * hidden + 2 * kv * hidden;
    }
    const RandomExpertShape& experts = shape.experts;
    if (!shape.is_moe_layer(layer)) {
      total += 3 * static_cast<std::uint64_t>(shape.ffn) * hidden;
      continue;
    }
    const std::uint64_t count = static_cast<std::uint64_t>(experts.count);
    total += count * hidden;                     // router
    if (experts.sigmoid_scores) total += count;  // selection bias
    total += 3 * count * static_cast<std::uint64_t>(experts.ffn) * hidden;
    total += 3 * static_cast<std::uint64_t>(experts.shared) *
             static_cast<std::uint64_t>(experts.ffn) * hidden;
  }
  return total;
}

bool is_random_model_spec(std::string_view model) {
  return model.starts_with(kPrefix);
}

Expected<RandomModelSpec> parse_random_model_spec(std::string_view text) {
  const auto fail = [&](std::string_view reason) {
    return Error{fmt::format("random model '{}': {}", text, reason)};
  };
  if (!is_random_model_spec(text)) {
    return fail(fmt::format("expected random:SHAPE:TYPE[:SEED], e.g. {}", kExample));
  }
  std::vector<std::string_view> fields;
  for (std::string_view rest = text.substr(kPrefix.size());;) {
    const std::size_t colon = rest.find(':');
    fields.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (fields.size() < 2 || fields.size() > 3) {
    return fail(fmt::format("expected random:SHAPE:TYPE[:SEED], e.g. {}; shapes: {}; types: {}",
                            kExample, known_shapes(), known_types()));
  }
  RandomModelSpec spec;
  spec.text = std::string(text);
  spec.shape = find_random_model_shape(fields[0]);
  if (spec.shape == nullptr) {
    return fail(fmt::format("unknown shape '{}' (known: {})", fields[0], known_shapes()));
  }
  const std::optional<kernels::TensorType> type = kernels::tensor_type_from_name(fields[1]);
  if (!type || std::find(kTypes.begin(), kTypes.end(), *type) == kTypes.end()) {
    return fail(fmt::format("unknown type '{}' (known: {})", fields[1], known_types()));
  }
  spec.type = *type;
  if (fields.size() == 3) {
    const std::string_view seed = fields[2];
    const auto [end, error] = std::from_chars(seed.data(), seed.data() + seed.size(), spec.seed);
    if (seed.empty() || error != std::errc() || end != seed.data() + seed.size()) {
      return fail(fmt::format("seed '{}' is not a non-negative integer", seed));
    }
  }
  return spec;
}

}  // namespace tern::engine
