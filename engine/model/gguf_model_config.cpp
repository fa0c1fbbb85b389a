// config_from_gguf: hyperparameters from GGUF metadata (`{arch}.*` keys, llama.cpp's names).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "engine/model/architecture.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/printable.h"

namespace tern::engine {
namespace {

// Reads `{arch}.*` keys, keeping the first problem as one error line.
class GgufKeys {
 public:
  GgufKeys(const GgufFile& gguf, std::string_view arch)
      : gguf_(gguf), prefix_(std::string(arch) + ".") {}

  std::optional<int> get_int(std::string_view suffix, bool required) {
    return read_int(prefix_ + std::string(suffix), required);
  }
  std::optional<int> read_int(const std::string& key, bool required) {
    if (!gguf_.has(key)) {
      if (required) fail(key, "missing");
      return std::nullopt;
    }
    const std::optional<std::int64_t> value = gguf_.get_int(key);
    if (!value) {
      fail(key,
           fmt::format("expected an integer, found {}", gguf_value_type_name(gguf_.type_of(key))));
      return std::nullopt;
    }
    if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max()) {
      fail(key, fmt::format("{} is out of range", *value));
      return std::nullopt;
    }
    return static_cast<int>(*value);
  }
  std::optional<float> get_float(std::string_view suffix, bool required) {
    return read_float(prefix_ + std::string(suffix), required);
  }
  std::optional<float> read_float(const std::string& key, bool required) {
    if (!gguf_.has(key)) {
      if (required) fail(key, "missing");
      return std::nullopt;
    }
    const std::optional<double> value = gguf_.get_float(key);
    if (!value) {
      fail(key,
           fmt::format("expected a number, found {}", gguf_value_type_name(gguf_.type_of(key))));
      return std::nullopt;
    }
    return static_cast<float>(*value);
  }
  std::optional<bool> get_bool(std::string_view suffix) {
    const std::string key = prefix_ + std::string(suffix);
    if (!gguf_.has(key)) return std::nullopt;
    const std::optional<bool> value = gguf_.get_bool(key);
    if (!value) fail(key, "expected a boolean");
    return value;
  }
  void fail(std::string_view key, std::string_view reason) {
    if (!error_) error_ = Error{fmt::format("{}: key '{}': {}", gguf_.path(), key, reason)};
  }
  const std::optional<Error>& error() const { return error_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const GgufFile& gguf_;
  std::string prefix_;
  std::optional<Error> error_;
};

void add_unique(std::vector<int>& ids, std::optional<int> id) {
  if (id && *id >= 0 && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
}

// llama.cpp's expert keys: `llama` with experts (Mixtral), `qwen3moe`, `deepseek2`.
void read_experts(GgufKeys& keys, ModelConfig& config) {
  MoeConfig& moe = config.moe;
  moe.n_experts = keys.get_int("expert_count", false).value_or(0);
  if (moe.n_experts == 0) return;
  moe.experts_per_token = keys.get_int("expert_used_count", true).value_or(0);
  moe.expert_ffn =
      keys.get_int("expert_feed_forward_length", false).value_or(config.ffn_hidden_size);
  if (const std::optional<bool> norm = keys.get_bool("expert_weights_norm")) {
    moe.normalize_weights = *norm;
  }
  moe.weight_scale = keys.get_float("expert_weights_scale", false).value_or(1.0f);
  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE: 1 softmax, 2 sigmoid; deepseek2 defaults to softmax
  // only for V2 files, which carry no gating key.
  if (const std::optional<int> gating = keys.get_int("expert_gating_func", false)) {
    if (*gating == 2) {
      moe.scoring = MoeConfig::Scoring::sigmoid;
    } else if (*gating != 1) {
      keys.fail(keys.prefix() + "expert_gating_func",
                fmt::format("{} is not supported (1 softmax, 2 sigmoid)", *gating));
    }
  }
  moe.n_groups = keys.get_int("expert_group_count", false).value_or(1);
  moe.groups_per_token = keys.get_int("expert_group_used_count", false).value_or(1);
  const std::int64_t shared_ffn =
      std::int64_t{keys.get_int("expert_shared_count", false).value_or(0)} * moe.expert_ffn;
  if (shared_ffn < 0 || shared_ffn > std::numeric_limits<int>::max()) {
    keys.fail(keys.prefix() + "expert_shared_count", "times the expert FFN length is out of range");
  }
  moe.shared_expert_ffn = static_cast<int>(std::clamp<std::int64_t>(shared_ffn, 0, 1 << 30));
  moe.first_dense_layers = keys.get_int("leading_dense_block_count", false).value_or(0);
}

// deepseek2: files written before 2025 keep key_length = nope + rope and a whole attn_kv_b;
// later ones store the absorbed sizes in key_length/value_length and the originals in *_mla.
void read_latent_attention(GgufKeys& keys, ModelConfig& config) {
  LatentAttentionConfig& latent = config.latent;
  latent.q_lora_rank = keys.get_int("attention.q_lora_rank", false).value_or(0);
  latent.kv_lora_rank = keys.get_int("attention.kv_lora_rank", true).value_or(0);
  latent.rope_head_dim = keys.get_int("rope.dimension_count", true).value_or(0);
  const int key_length = keys.get_int("attention.key_length_mla", false)
                             .value_or(keys.get_int("attention.key_length", true).value_or(0));
  latent.value_head_dim = keys.get_int("attention.value_length_mla", false)
                              .value_or(keys.get_int("attention.value_length", true).value_or(0));
  latent.nope_head_dim = static_cast<int>(
      std::clamp<std::int64_t>(std::int64_t{key_length} - latent.rope_head_dim,
                               std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  config.head_dim = key_length;
  config.n_kv_heads = config.n_heads;  // every head reads the one latent
}

}  // namespace

Expected<ModelConfig> config_from_gguf(const GgufFile& gguf) {
  const std::optional<std::string_view> arch_name = gguf.get_string("general.architecture");
  if (!arch_name)
    return Error{gguf.path() + ": key 'general.architecture': missing or not a string"};
  const ArchitectureInfo* arch = find_architecture(*arch_name);
  if (arch == nullptr) {
    return Error{fmt::format("{}: unsupported architecture '{}' (supported: {})", gguf.path(),
                             printable(*arch_name), supported_architectures())};
  }
  ModelConfig config;
  config.architecture = std::string(arch->name);
  GgufKeys keys(gguf, arch->name);
  config.n_layers = keys.get_int("block_count", true).value_or(0);
  config.hidden_size = keys.get_int("embedding_length", true).value_or(0);
  config.ffn_hidden_size = keys.get_int("feed_forward_length", true).value_or(0);
  config.n_heads = keys.get_int("attention.head_count", true).value_or(0);
  config.n_kv_heads = keys.get_int("attention.head_count_kv", false).value_or(config.n_heads);
  const int default_head_dim = config.n_heads > 0 ? config.hidden_size / config.n_heads : 0;
  config.head_dim = keys.get_int("attention.key_length", false).value_or(default_head_dim);
  const bool latent_attention = arch->name == "deepseek2";
  if (const std::optional<int> value_length = keys.get_int("attention.value_length", false);
      !latent_attention && value_length && *value_length != config.head_dim) {
    keys.fail(keys.prefix() + "attention.value_length",
              fmt::format("{} differs from the key length {}, which is not supported",
                          *value_length, config.head_dim));
  }
  if (const std::optional<int> rope_dims = keys.get_int("rope.dimension_count", false);
      !latent_attention && rope_dims && *rope_dims != config.head_dim) {
    keys.fail(keys.prefix() + "rope.dimension_count",
              fmt::format("partial rotary embedding ({} of {} dimensions) is not supported",
                          *rope_dims, config.head_dim));
  }
  config.rms_norm_eps = keys.get_float("attention.layer_norm_rms_epsilon", true).value_or(1e-5f);
  config.rope_theta = keys.get_float("rope.freq_base", false).value_or(10000.0f);
  if (const std::optional<int> context = keys.get_int("context_length", false)) {
    config.context_length = *context;
  } else {
    config.context_length = 2048;
    spdlog::warn("{}: no {}context_length; assuming 2048", gguf.path(), keys.prefix());
  }

  // RoPE scaling: the typed keys, else the older `rope.scale_linear`. Llama 3.1-style scaling
  // arrives as a `rope_freqs.weight` tensor instead, which the weights expose.
  RopeScalingConfig& scaling = config.rope_scaling;
  const std::string scaling_type_key = keys.prefix() + "rope.scaling.type";
  const std::optional<std::string_view> scaling_type = gguf.get_string(scaling_type_key);
  const std::optional<float> scaling_factor = keys.get_float("rope.scaling.factor", false);
  // A YaRN parameter that must be positive when stated.
  const auto positive_or = [&](std::string_view suffix, float default_value) {
    const std::optional<float> value = keys.get_float(suffix, false);
    if (value && !(*value > 0)) {
      keys.fail(keys.prefix() + std::string(suffix), fmt::format("{} must be positive", *value));
    }
    return value.value_or(default_value);
  };
  if (scaling_type == "linear" || (!scaling_type && keys.get_float("rope.scale_linear", false))) {
    scaling.type = RopeScalingConfig::Type::linear;
    scaling.factor =
        scaling_factor.value_or(keys.get_float("rope.scale_linear", false).value_or(1));
  } else if (scaling_type == "yarn") {
    // The original context defaults to the trained one, as in llama.cpp. llama.cpp's deepseek2
    // takes yarn_log_multiplier as 0.1 * mscale_all_dim, and DeepSeek's mscale equals it. A
    // multiplier without the yarn type scales nothing.
    scaling.type = RopeScalingConfig::Type::yarn;
    scaling.factor = scaling_factor.value_or(1);
    scaling.original_max_position = config.context_length;
    scaling.beta_fast = positive_or("rope.scaling.yarn_beta_fast", 32);
    scaling.beta_slow = positive_or("rope.scaling.yarn_beta_slow", 1);
    const float log_multiplier =
        keys.get_float("rope.scaling.yarn_log_multiplier", false).value_or(0);
    if (log_multiplier < 0) {
      keys.fail(keys.prefix() + "rope.scaling.yarn_log_multiplier",
                fmt::format("{} must not be negative", log_multiplier));
    }
    scaling.mscale = scaling.mscale_all_dim = log_multiplier / 0.1f;
  } else if (scaling_type && *scaling_type != "none") {
    spdlog::warn(
        "{}: RoPE scaling '{}' is not supported; positions beyond the original context "
        "will degrade",
        gguf.path(), *scaling_type);
  }
  if (scaling.type == RopeScalingConfig::Type::linear && scaling.factor == 1.0f) {
    scaling.type = RopeScalingConfig::Type::none;
  }
  if (const std::optional<int> original =
          keys.get_int("rope.scaling.original_context_length", false)) {
    scaling.original_max_position = *original;
    if (scaling.type == RopeScalingConfig::Type::yarn && *original <= 0) {
      keys.fail(keys.prefix() + "rope.scaling.original_context_length",
                fmt::format("{} must be positive", *original));
    }
  }

  // Vocabulary: the declared size, else the tokenizer's token count, else the embedding's rows.
  if (const std::optional<int> vocab = keys.get_int("vocab_size", false)) {
    config.vocab_size = *vocab;
  } else if (const std::optional<GgufArray> tokens = gguf.get_array("tokenizer.ggml.tokens")) {
    config.vocab_size =
        static_cast<int>(std::min<std::size_t>(tokens->size(), std::numeric_limits<int>::max()));
  } else if (const GgufTensorInfo* embedding = gguf.find_tensor("token_embd.weight");
             embedding != nullptr && embedding->shape.size() == 2) {
    config.vocab_size = static_cast<int>(
        std::min<std::int64_t>(embedding->shape[1], std::numeric_limits<int>::max()));
  }

  add_unique(config.eos_token_ids, keys.read_int("tokenizer.ggml.eos_token_id", false));
  add_unique(config.eos_token_ids, keys.read_int("tokenizer.ggml.eot_token_id", false));
  add_unique(config.eos_token_ids, keys.read_int("tokenizer.ggml.eom_token_id", false));
  config.bos_token_id = keys.read_int("tokenizer.ggml.bos_token_id", false).value_or(-1);

  GenerationDefaults& generation = config.generation;
  generation.temperature = keys.read_float("general.sampling.temp", false);
  generation.top_p = keys.read_float("general.sampling.top_p", false);
  generation.top_k = keys.read_int("general.sampling.top_k", false);
  generation.min_p = keys.read_float("general.sampling.min_p", false);
  generation.repetition_penalty = keys.read_float("general.sampling.penalty_repeat", false);
  read_experts(keys, config);
  if (latent_attention) read_latent_attention(keys, config);
  if (keys.error()) return *keys.error();

  // GGUF's llama converter permutes Q/K rows for interleaved RoPE; qwen files keep rotate-half.
  config.rope_layout =
      arch->name == "llama" || latent_attention ? RopeLayout::interleaved : RopeLayout::neox;
  config.tied_embeddings = gguf.find_tensor("output.weight") == nullptr;
  config.qkv_bias = arch->qkv_bias || gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  config.qk_norm = arch->qk_norm;
  if (Status status = validate_config(config, gguf.path()); !status) return Error{status.message()};
  return config;
}

}  // namespace tern::engine
