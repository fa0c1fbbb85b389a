// config_from_hf_directory: hyperparameters from a Hugging Face `config.json`, with the
// sampling defaults and extra EOS ids of `generation_config.json`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "engine/model/architecture.h"
#include "engine/model/json_object_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/printable.h"

namespace tern::engine {
namespace {

std::optional<int> to_int(JsonObjectReader& reader, std::string_view key) {
  const std::optional<std::int64_t> value = reader.get_int(key);
  if (!value) return std::nullopt;
  if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max()) {
    reader.fail(key, fmt::format("{} is out of range", *value));
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

std::optional<float> to_float(JsonObjectReader& reader, std::string_view key) {
  const std::optional<double> value = reader.get_number(key);
  if (!value) return std::nullopt;
  return static_cast<float>(*value);
}

int required_int(JsonObjectReader& reader, std::string_view key) {
  const std::optional<int> value = to_int(reader, key);
  if (!value && !reader.get(key)) reader.fail(key, "missing");
  return value.value_or(0);
}

void add_token_ids(JsonObjectReader& reader, std::string_view key, std::vector<int>& ids) {
  const std::optional<std::vector<std::int64_t>> list = reader.get_int_list(key);
  if (!list) return;
  for (std::int64_t id : *list) {
    if (id < 0 || id > std::numeric_limits<int>::max()) {
      reader.fail(key, fmt::format("token id {} is out of range", id));
      return;
    }
    if (std::find(ids.begin(), ids.end(), static_cast<int>(id)) == ids.end()) {
      ids.push_back(static_cast<int>(id));
    }
  }
}

// A YaRN parameter that must be positive; HF's `get(key) or default` makes 0 and null the default.
float positive_or(JsonObjectReader& reader, std::string_view key, float default_value) {
  const float value = to_float(reader, key).value_or(0);
  if (value == 0) return default_value;
  if (!(value > 0)) reader.fail(key, fmt::format("{} must be positive", value));
  return value;
}

// HF's _compute_yarn_parameters: the original context defaults to max_position_embeddings and a
// missing factor is the ratio of the two.
void read_yarn_scaling(JsonObjectReader& reader, int context_length, RopeScalingConfig& scaling) {
  scaling.type = RopeScalingConfig::Type::yarn;
  scaling.original_max_position =
      to_int(reader, "original_max_position_embeddings").value_or(context_length);
  if (scaling.original_max_position <= 0) {
    reader.fail("original_max_position_embeddings",
                fmt::format("{} must be positive", scaling.original_max_position));
    return;
  }
  scaling.factor = to_float(reader, "factor")
                       .value_or(static_cast<float>(static_cast<double>(context_length) /
                                                    scaling.original_max_position));
  scaling.beta_fast = positive_or(reader, "beta_fast", 32);
  scaling.beta_slow = positive_or(reader, "beta_slow", 1);
  // 0 and absent alike: HF tests `mscale and mscale_all_dim`. A negative one could zero
  // get_mscale and make the attention factor infinite.
  scaling.mscale = to_float(reader, "mscale").value_or(0);
  scaling.mscale_all_dim = to_float(reader, "mscale_all_dim").value_or(0);
  for (const auto& [key, value] :
       {std::pair{"mscale", scaling.mscale}, std::pair{"mscale_all_dim", scaling.mscale_all_dim}}) {
    if (value < 0) reader.fail(key, fmt::format("{} must not be negative", value));
  }
  scaling.attention_factor = to_float(reader, "attention_factor");
  if (scaling.attention_factor && !(*scaling.attention_factor > 0)) {
    reader.fail("attention_factor", fmt::format("{} must be positive", *scaling.attention_factor));
  }
}

void read_rope_scaling(JsonObjectReader& config_reader, ModelConfig& config) {
  const std::optional<simdjson::dom::object> object = config_reader.get_object("rope_scaling");
  if (!object) return;
  JsonObjectReader reader(*object, config_reader.context() + ": 'rope_scaling'");
  std::optional<std::string_view> type = reader.get_string("rope_type");
  if (!type) type = reader.get_string("type");
  RopeScalingConfig& scaling = config.rope_scaling;
  if (type == "linear") {
    scaling.type = RopeScalingConfig::Type::linear;
    scaling.factor = to_float(reader, "factor").value_or(1);
  } else if (type == "llama3") {
    scaling.type = RopeScalingConfig::Type::llama3;
    scaling.factor = to_float(reader, "factor").value_or(1);
    scaling.low_freq_factor = to_float(reader, "low_freq_factor").value_or(1);
    scaling.high_freq_factor = to_float(reader, "high_freq_factor").value_or(4);
    scaling.original_max_position =
        to_int(reader, "original_max_position_embeddings").value_or(8192);
  } else if (type == "yarn" || type == "deepseek_yarn") {  // older DeepSeek configs
    read_yarn_scaling(reader, config.context_length, scaling);
  } else if (type && *type != "default") {
    spdlog::warn(
        "{}: RoPE scaling '{}' is not supported; positions beyond the original context "
        "will degrade",
        config_reader.context(), *type);
  }
  if (reader.error()) config_reader.fail("rope_scaling", reader.error()->message);
}

void read_generation_config(const std::string& path, ModelConfig& config,
                            std::optional<Error>& error) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) return;
  JsonDocument document;
  if (Status status = parse_json_file(path, document); !status) {
    error = Error{status.message()};
    return;
  }
  JsonObjectReader reader(document.root, path);
  GenerationDefaults& generation = config.generation;
  generation.temperature = to_float(reader, "temperature");
  generation.top_p = to_float(reader, "top_p");
  generation.top_k = to_int(reader, "top_k");
  generation.min_p = to_float(reader, "min_p");
  generation.repetition_penalty = to_float(reader, "repetition_penalty");
  add_token_ids(reader, "eos_token_id", config.eos_token_ids);
  if (config.bos_token_id < 0) config.bos_token_id = to_int(reader, "bos_token_id").value_or(-1);
  if (reader.error()) error = reader.error();
}

// Mixtral (`num_local_experts`), Qwen3-MoE (`num_experts`) and DeepSeek-V3 (`n_routed_experts`).
// Keyed by the architecture, since config.json may name it by `architectures` alone.
void read_experts(JsonObjectReader& reader, ModelConfig& config) {
  MoeConfig& moe = config.moe;
  const std::string_view arch = config.architecture;
  if (arch == "llama" && reader.get("num_local_experts")) {
    moe.n_experts = required_int(reader, "num_local_experts");
    moe.expert_ffn = config.ffn_hidden_size;
  } else if (arch == "qwen3moe") {
    moe.n_experts = required_int(reader, "num_experts");
    moe.expert_ffn = required_int(reader, "moe_intermediate_size");
    moe.normalize_weights = reader.get_bool("norm_topk_prob").value_or(false);
    moe.sparse_step = to_int(reader, "decoder_sparse_step").value_or(1);
    if (const auto layers = reader.get_int_list("mlp_only_layers")) {
      for (std::int64_t layer : *layers) {
        if (layer < 0 || layer >= config.n_layers) {
          reader.fail("mlp_only_layers", fmt::format("layer {} is out of range", layer));
          return;
        }
        moe.dense_layers.push_back(static_cast<int>(layer));
      }
    }
  } else if (arch == "deepseek2") {
    moe.n_experts = required_int(reader, "n_routed_experts");
    moe.expert_ffn = required_int(reader, "moe_intermediate_size");
    moe.scoring = MoeConfig::Scoring::sigmoid;
    moe.normalize_weights = reader.get_bool("norm_topk_prob").value_or(true);
    moe.n_groups = to_int(reader, "n_group").value_or(1);
    moe.groups_per_token = to_int(reader, "topk_group").value_or(1);
    moe.weight_scale = to_float(reader, "routed_scaling_factor").value_or(1.0f);
    const std::int64_t shared_ffn =
        std::int64_t{to_int(reader, "n_shared_experts").value_or(0)} * moe.expert_ffn;
    if (shared_ffn < 0 || shared_ffn > std::numeric_limits<int>::max()) {
      reader.fail("n_shared_experts", "times moe_intermediate_size is out of range");
    }
    moe.shared_expert_ffn = static_cast<int>(std::clamp<std::int64_t>(shared_ffn, 0, 1 << 30));
    moe.first_dense_layers = to_int(reader, "first_k_dense_replace").value_or(0);
    if (const auto scoring = reader.get_string("scoring_func"); scoring && *scoring != "sigmoid") {
      reader.fail("scoring_func", fmt::format("'{}' is not supported (DeepSeek-V3 uses sigmoid)",
                                              printable(*scoring)));
    }
    if (const auto method = reader.get_string("topk_method"); method && *method != "noaux_tc") {
      reader.fail("topk_method", fmt::format("'{}' is not supported (DeepSeek-V3 uses noaux_tc)",
                                             printable(*method)));
    }
    if (const auto frequency = to_int(reader, "moe_layer_freq"); frequency && *frequency != 1) {
      reader.fail("moe_layer_freq", fmt::format("{} is not supported (only 1)", *frequency));
    }
  } else {
    return;
  }
  moe.experts_per_token = required_int(reader, "num_experts_per_tok");
}

void read_latent_attention(JsonObjectReader& reader, ModelConfig& config) {
  LatentAttentionConfig& latent = config.latent;
  latent.q_lora_rank = to_int(reader, "q_lora_rank").value_or(0);  // null: a plain q_proj
  latent.kv_lora_rank = required_int(reader, "kv_lora_rank");
  latent.nope_head_dim = required_int(reader, "qk_nope_head_dim");
  latent.rope_head_dim = required_int(reader, "qk_rope_head_dim");
  latent.value_head_dim = required_int(reader, "v_head_dim");
  config.head_dim = static_cast<int>(std::clamp<std::int64_t>(
      std::int64_t{latent.nope_head_dim} + latent.rope_head_dim, 0, 1 << 30));
  // HF's rope_interleave (default true) rotates adjacent pairs.
  config.rope_layout = reader.get_bool("rope_interleave").value_or(true) ? RopeLayout::interleaved
                                                                         : RopeLayout::neox;
}

}  // namespace

Expected<ModelConfig> config_from_hf_directory(const std::string& directory) {
  const std::filesystem::path dir(directory);
  const std::string config_path = (dir / "config.json").string();
  JsonDocument document;
  if (Status status = parse_json_file(config_path, document); !status)
    return Error{status.message()};
  JsonObjectReader reader(document.root, config_path);

  std::vector<std::string_view> architectures;
  if (const std::optional<simdjson::dom::element> list = reader.get("architectures")) {
    simdjson::dom::array array;
    if (!list->get_array().get(array)) {
      for (simdjson::dom::element item : array) {
        std::string_view name;
        if (!item.get_string().get(name)) architectures.push_back(name);
      }
    }
  }
  const std::string_view model_type = reader.get_string("model_type").value_or("");
  const ArchitectureInfo* arch = find_hf_architecture(model_type, architectures);
  if (arch == nullptr) {
    const std::string_view shown =
        !model_type.empty() ? model_type : (architectures.empty() ? "" : architectures.front());
    return Error{fmt::format("{}: unsupported architecture '{}' (supported: {})", config_path,
                             printable(shown), supported_architectures())};
  }

  ModelConfig config;
  config.architecture = std::string(arch->name);
  config.hidden_size = required_int(reader, "hidden_size");
  config.ffn_hidden_size = required_int(reader, "intermediate_size");
  config.n_layers = required_int(reader, "num_hidden_layers");
  config.n_heads = required_int(reader, "num_attention_heads");
  config.n_kv_heads = to_int(reader, "num_key_value_heads").value_or(config.n_heads);
  const int default_head_dim = config.n_heads > 0 ? config.hidden_size / config.n_heads : 0;
  config.head_dim = to_int(reader, "head_dim").value_or(default_head_dim);
  config.vocab_size = required_int(reader, "vocab_size");
  config.context_length = to_int(reader, "max_position_embeddings").value_or(2048);
  config.rms_norm_eps = to_float(reader, "rms_norm_eps").value_or(1e-6f);
  config.rope_theta = to_float(reader, "rope_theta").value_or(10000.0f);
  if (const std::optional<double> partial = reader.get_number("partial_rotary_factor");
      partial && *partial != 1.0) {
    reader.fail("partial_rotary_factor", "partial rotary embedding is not supported");
  }
  read_rope_scaling(reader, config);
  if (config.rope_scaling.type == RopeScalingConfig::Type::linear &&
      config.rope_scaling.factor == 1.0f) {
    config.rope_scaling.type = RopeScalingConfig::Type::none;
  }
  config.rope_layout = RopeLayout::neox;
  config.tied_embeddings = reader.get_bool("tie_word_embeddings").value_or(false);
  config.qkv_bias = arch->qkv_bias || reader.get_bool("attention_bias").value_or(false);
  config.qk_norm = arch->qk_norm;
  read_experts(reader, config);
  if (config.architecture == "deepseek2") read_latent_attention(reader, config);
  add_token_ids(reader, "eos_token_id", config.eos_token_ids);
  config.bos_token_id = to_int(reader, "bos_token_id").value_or(-1);
  if (const std::optional<int> window = to_int(reader, "sliding_window");
      window && *window < config.context_length &&
      reader.get_bool("use_sliding_window").value_or(true)) {
    spdlog::warn(
        "{}: sliding-window attention ({} tokens) is not implemented; full attention "
        "is used, which matches the model up to {} tokens",
        config_path, *window, *window);
  }
  if (reader.error()) return *reader.error();

  std::optional<Error> generation_error;
  read_generation_config((dir / "generation_config.json").string(), config, generation_error);
  if (generation_error) return *generation_error;
  if (Status status = validate_config(config, config_path); !status) return Error{status.message()};
  return config;
}

}  // namespace tern::engine
