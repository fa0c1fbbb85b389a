#include "engine/model/gguf_metadata_from_hf.h"

#include <simdjson.h>

#include <filesystem>
#include <unordered_map>

#include <fmt/format.h>

#include "engine/model/gguf_writer.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kTokenNormal = 1;
constexpr std::int32_t kTokenControl = 3;

struct HfVocabulary {
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  std::vector<std::string> merges;  // "a b"
  bool byte_level = false;
};

Expected<HfVocabulary> read_vocabulary(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.load(path).get(root); error) {
    return Error{fmt::format("{}: {}", path, simdjson::error_message(error))};
  }
  simdjson::dom::object model;
  if (root["model"].get_object().get(model)) return Error{path + ": no 'model' object"};
  std::string_view model_type;
  if (model["type"].get_string().get(model_type) || model_type != "BPE") {
    return Error{
        fmt::format("{}: model type '{}' cannot be written to GGUF (only BPE)", path, model_type)};
  }
  HfVocabulary vocabulary;
  auto place = [&](std::int64_t id, std::string_view text, std::int32_t type) -> Status {
    if (id < 0 || id > 10'000'000)
      return Error{fmt::format("{}: token id {} out of range", path, id)};
    const auto index = static_cast<std::size_t>(id);
    if (vocabulary.tokens.size() <= index) {
      vocabulary.tokens.resize(index + 1);
      vocabulary.types.resize(index + 1, kTokenNormal);
    }
    vocabulary.tokens[index] = std::string(text);
    vocabulary.types[index] = type;
    return Status::success();
  };
  simdjson::dom::object vocab;
  if (model["vocab"].get_object().get(vocab)) return Error{path + ": no model.vocab"};
  for (auto [text, id] : vocab) {
    std::int64_t value = 0;
    if (id.get_int64().get(value)) return Error{path + ": a vocab id is not an integer"};
    if (Status placed = place(value, text, kTokenNormal); !placed.ok())
      return Error{placed.message()};
  }
  simdjson::dom::array added;
  if (!root["added_tokens"].get_array().get(added)) {
    for (simdjson::dom::element token : added) {
      std::int64_t id = 0;
      std::string_view content;
      bool special = false;
      if (token["id"].get_int64().get(id) || token["content"].get_string().get(content)) continue;
      if (token["special"].get_bool().get(special)) special = false;
      if (Status placed = place(id, content, special ? kTokenControl : kTokenNormal);
          !placed.ok()) {
        return Error{placed.message()};
      }
    }
  }
  simdjson::dom::array merges;
  if (!model["merges"].get_array().get(merges)) {
    for (simdjson::dom::element merge : merges) {
      std::string_view text;
      if (!merge.get_string().get(text)) {
        vocabulary.merges.emplace_back(text);
        continue;
      }
      simdjson::dom::array pair;
      std::string_view left, right;
      if (!merge.get_array().get(pair) && pair.size() == 2 && !pair.at(0).get_string().get(left) &&
          !pair.at(1).get_string().get(right)) {
        vocabulary.merges.push_back(fmt::format("{} {}", left, right));
      }
    }
  }
  // Byte-level BPE announces itself through a ByteLevel pre-tokenizer or decoder.
  std::string_view pre_type, decoder_type;
  if (root["pre_tokenizer"]["type"].get_string().get(pre_type)) pre_type = {};
  if (root["decoder"]["type"].get_string().get(decoder_type)) decoder_type = {};
  vocabulary.byte_level = pre_type == "ByteLevel" || decoder_type == "ByteLevel";
  simdjson::dom::array pretokenizers;
  if (!root["pre_tokenizer"]["pretokenizers"].get_array().get(pretokenizers)) {
    for (simdjson::dom::element p : pretokenizers) {
      std::string_view type;
      if (!p["type"].get_string().get(type) && type == "ByteLevel") vocabulary.byte_level = true;
    }
  }
  return vocabulary;
}

// HF's YaRN as llama.cpp's keys. GGUF has one magnitude key, yarn_log_multiplier, which
// config_from_gguf (like llama.cpp's deepseek2) reads as 0.1 * mscale_all_dim with mscale equal
// to it, so other combinations, and an explicit attention_factor, cannot be represented.
Status write_yarn_keys(const RopeScalingConfig& scaling, const std::string& prefix,
                       const std::string& source, GgufWriter& writer) {
  if (scaling.attention_factor) {
    return Error{fmt::format(
        "{}: rope_scaling: YaRN with an explicit attention_factor ({}) cannot be written to GGUF",
        source, *scaling.attention_factor)};
  }
  if (scaling.mscale != scaling.mscale_all_dim) {
    return Error{fmt::format(
        "{}: rope_scaling: YaRN with mscale {} and mscale_all_dim {} cannot be written to GGUF "
        "(its yarn_log_multiplier stands for both, as 0.1 * mscale_all_dim)",
        source, scaling.mscale, scaling.mscale_all_dim)};
  }
  writer.add_string(prefix + "rope.scaling.type", "yarn");
  writer.add_float32(prefix + "rope.scaling.factor", scaling.factor);
  writer.add_uint32(prefix + "rope.scaling.original_context_length",
                    static_cast<std::uint32_t>(scaling.original_max_position));
  writer.add_float32(prefix + "rope.scaling.yarn_beta_fast", scaling.beta_fast);
  writer.add_float32(prefix + "rope.scaling.yarn_beta_slow", scaling.beta_slow);
  if (scaling.mscale_all_dim != 0) {
    writer.add_float32(prefix + "rope.scaling.yarn_log_multiplier", 0.1f * scaling.mscale_all_dim);
  }
  return Status::success();
}

Status write_rope_scaling_keys(const ModelConfig& config, const std::string& source,
                               GgufWriter& writer) {
  const std::string prefix = config.architecture + ".";
  switch (config.rope_scaling.type) {
    case RopeScalingConfig::Type::none:
      return Status::success();
    case RopeScalingConfig::Type::linear:
      writer.add_string(prefix + "rope.scaling.type", "linear");
      writer.add_float32(prefix + "rope.scaling.factor", config.rope_scaling.factor);
      return Status::success();
    case RopeScalingConfig::Type::yarn:
      return write_yarn_keys(config.rope_scaling, prefix, source, writer);
    case RopeScalingConfig::Type::llama3:
      break;
  }
  return Error{fmt::format("{}: Llama 3 RoPE scaling is not yet written to GGUF", source)};
}

// llama.cpp's expert keys, each written where config_from_gguf's default would differ and, for
// deepseek2, always, as llama.cpp's converter does.
Status write_expert_keys(const ModelConfig& config, const std::string& source, GgufWriter& writer) {
  const MoeConfig& moe = config.moe;
  if (!moe.enabled()) return Status::success();
  if (moe.sparse_step != 1 || !moe.dense_layers.empty()) {
    return Error{fmt::format(
        "{}: dense layers between expert layers (decoder_sparse_step {}, {} mlp_only_layers) "
        "cannot be written to GGUF, which has only leading_dense_block_count",
        source, moe.sparse_step, moe.dense_layers.size())};
  }
  const std::string prefix = config.architecture + ".";
  const bool deepseek = config.architecture == "deepseek2";
  const auto as_u32 = [](int value) { return static_cast<std::uint32_t>(value); };
  writer.add_uint32(prefix + "expert_count", as_u32(moe.n_experts));
  writer.add_uint32(prefix + "expert_used_count", as_u32(moe.experts_per_token));
  if (config.architecture != "llama" || moe.expert_ffn != config.ffn_hidden_size) {
    writer.add_uint32(prefix + "expert_feed_forward_length", as_u32(moe.expert_ffn));
  }
  if (config.architecture != "llama" || !moe.normalize_weights) {
    writer.add_bool(prefix + "expert_weights_norm", moe.normalize_weights);
  }
  if (deepseek || moe.weight_scale != 1.0f) {
    writer.add_float32(prefix + "expert_weights_scale", moe.weight_scale);
  }
  if (deepseek || moe.scoring != MoeConfig::Scoring::softmax) {
    writer.add_uint32(prefix + "expert_gating_func",
                      moe.scoring == MoeConfig::Scoring::sigmoid ? 2 : 1);
  }
  if (deepseek || moe.n_groups != 1 || moe.groups_per_token != 1) {
    writer.add_uint32(prefix + "expert_group_count", as_u32(moe.n_groups));
    writer.add_uint32(prefix + "expert_group_used_count", as_u32(moe.groups_per_token));
  }
  if (deepseek || moe.shared_expert_ffn > 0) {
    if (moe.shared_expert_ffn % moe.expert_ffn != 0) {
      return Error{fmt::format(
          "{}: the shared experts' FFN length {} is not a whole number of experts of {}, which "
          "GGUF's expert_shared_count needs",
          source, moe.shared_expert_ffn, moe.expert_ffn)};
    }
    writer.add_uint32(prefix + "expert_shared_count",
                      as_u32(moe.shared_expert_ffn / moe.expert_ffn));
  }
  if (deepseek || moe.first_dense_layers > 0) {
    writer.add_uint32(prefix + "leading_dense_block_count", as_u32(moe.first_dense_layers));
  }
  return Status::success();
}

// Head sizes: latent attention's key is nope + rope of which only the rope part rotates, and its
// value has its own width; ordinary attention has head_dim for all three.
void write_head_keys(const ModelConfig& config, GgufWriter& writer) {
  const std::string prefix = config.architecture + ".";
  const auto as_u32 = [](int value) { return static_cast<std::uint32_t>(value); };
  const LatentAttentionConfig& latent = config.latent;
  writer.add_uint32(prefix + "attention.key_length", as_u32(config.head_dim));
  if (!latent.enabled()) {
    writer.add_uint32(prefix + "attention.value_length", as_u32(config.head_dim));
    writer.add_uint32(prefix + "rope.dimension_count", as_u32(config.head_dim));
    return;
  }
  writer.add_uint32(prefix + "attention.value_length", as_u32(latent.value_head_dim));
  writer.add_uint32(prefix + "rope.dimension_count", as_u32(latent.rope_head_dim));
  if (latent.q_lora_rank > 0) {
    writer.add_uint32(prefix + "attention.q_lora_rank", as_u32(latent.q_lora_rank));
  }
  writer.add_uint32(prefix + "attention.kv_lora_rank", as_u32(latent.kv_lora_rank));
}

}  // namespace

Status write_hf_metadata(const ModelConfig& config, const std::string& directory,
                         std::uint32_t file_type, GgufWriter& writer) {
  const std::string& arch = config.architecture;
  const std::string config_path = directory + "/config.json";
  writer.add_string("general.architecture", arch);
  writer.add_string("general.name", std::filesystem::path(directory).filename().string());
  writer.add_uint32("general.file_type", file_type);
  writer.add_uint32(arch + ".vocab_size", static_cast<std::uint32_t>(config.vocab_size));
  writer.add_uint32(arch + ".context_length", static_cast<std::uint32_t>(config.context_length));
  writer.add_uint32(arch + ".embedding_length", static_cast<std::uint32_t>(config.hidden_size));
  writer.add_uint32(arch + ".block_count", static_cast<std::uint32_t>(config.n_layers));
  writer.add_uint32(arch + ".feed_forward_length",
                    static_cast<std::uint32_t>(config.ffn_hidden_size));
  writer.add_uint32(arch + ".attention.head_count", static_cast<std::uint32_t>(config.n_heads));
  writer.add_uint32(arch + ".attention.head_count_kv",
                    static_cast<std::uint32_t>(config.n_kv_heads));
  write_head_keys(config, writer);
  writer.add_float32(arch + ".rope.freq_base", config.rope_theta);
  writer.add_float32(arch + ".attention.layer_norm_rms_epsilon", config.rms_norm_eps);
  if (Status written = write_rope_scaling_keys(config, config_path, writer); !written.ok()) {
    return written;
  }
  if (Status written = write_expert_keys(config, config_path, writer); !written.ok()) {
    return written;
  }

  const std::string tokenizer_path = directory + "/tokenizer.json";
  auto vocabulary = read_vocabulary(tokenizer_path);
  if (!vocabulary) return Error{vocabulary.error().message};
  if (static_cast<int>(vocabulary->tokens.size()) > config.vocab_size) {
    return Error{fmt::format("{}: {} tokens, but the model's vocabulary has {}", tokenizer_path,
                             vocabulary->tokens.size(), config.vocab_size)};
  }
  vocabulary->tokens.resize(static_cast<std::size_t>(config.vocab_size));
  vocabulary->types.resize(static_cast<std::size_t>(config.vocab_size), kTokenNormal);
  for (std::size_t i = 0; i < vocabulary->tokens.size(); ++i) {
    if (vocabulary->tokens[i].empty()) vocabulary->tokens[i] = fmt::format("[PAD{}]", i);
  }
  if (vocabulary->byte_level) {
    writer.add_string("tokenizer.ggml.model", "gpt2");
    writer.add_string("tokenizer.ggml.pre", arch == "llama"            ? "llama-bpe"
                                            : arch.starts_with("qwen") ? "qwen2"
                                                                       : "default");
    writer.add_string_array("tokenizer.ggml.tokens", vocabulary->tokens);
    writer.add_int32_array("tokenizer.ggml.token_type", vocabulary->types);
    writer.add_string_array("tokenizer.ggml.merges", vocabulary->merges);
  } else {
    // SentencePiece-style BPE: GGUF's `llama` model merges by score, so a merged token scores
    // minus its merge rank and earlier merges win, as in the BPE.
    std::unordered_map<std::string, std::size_t> rank;
    for (std::size_t i = 0; i < vocabulary->merges.size(); ++i) {
      std::string merged = vocabulary->merges[i];
      merged.erase(merged.find(' '), 1);
      rank.emplace(std::move(merged), i);
    }
    std::vector<float> scores(vocabulary->tokens.size(), 0.0f);
    for (std::size_t i = 0; i < scores.size(); ++i) {
      const auto found = rank.find(vocabulary->tokens[i]);
      if (found != rank.end()) scores[i] = -static_cast<float>(found->second);
    }
    writer.add_string("tokenizer.ggml.model", "llama");
    writer.add_string_array("tokenizer.ggml.tokens", vocabulary->tokens);
    writer.add_float32_array("tokenizer.ggml.scores", scores);
    writer.add_int32_array("tokenizer.ggml.token_type", vocabulary->types);
  }
  if (config.bos_token_id >= 0) {
    writer.add_uint32("tokenizer.ggml.bos_token_id",
                      static_cast<std::uint32_t>(config.bos_token_id));
  }
  if (!config.eos_token_ids.empty()) {
    writer.add_uint32("tokenizer.ggml.eos_token_id",
                      static_cast<std::uint32_t>(config.eos_token_ids.front()));
  }

  simdjson::dom::parser parser;
  simdjson::dom::element tokenizer_config;
  if (!parser.load(directory + "/tokenizer_config.json").get(tokenizer_config)) {
    bool add_bos = false;
    if (!tokenizer_config["add_bos_token"].get_bool().get(add_bos)) {
      writer.add_bool("tokenizer.ggml.add_bos_token", add_bos);
    }
    std::string_view chat_template;
    if (!tokenizer_config["chat_template"].get_string().get(chat_template)) {
      writer.add_string("tokenizer.chat_template", chat_template);
    }
  }
  return Status::success();
}

}  // namespace tern::engine
