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

}  // namespace

Status write_hf_metadata(const ModelConfig& config, const std::string& directory,
                         std::uint32_t file_type, GgufWriter& writer) {
  const std::string& arch = config.architecture;
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
  writer.add_uint32(arch + ".attention.key_length", static_cast<std::uint32_t>(config.head_dim));
  writer.add_uint32(arch + ".attention.value_length", static_cast<std::uint32_t>(config.head_dim));
  writer.add_uint32(arch + ".rope.dimension_count", static_cast<std::uint32_t>(config.head_dim));
  writer.add_float32(arch + ".rope.freq_base", config.rope_theta);
  writer.add_float32(arch + ".attention.layer_norm_rms_epsilon", config.rms_norm_eps);
  if (config.rope_scaling.type == RopeScalingConfig::Type::linear) {
    writer.add_string(arch + ".rope.scaling.type", "linear");
    writer.add_float32(arch + ".rope.scaling.factor", config.rope_scaling.factor);
  } else if (config.rope_scaling.type == RopeScalingConfig::Type::llama3) {
    return Error{fmt::format("{}: Llama 3 RoPE scaling is not yet written to GGUF", directory)};
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
    writer.add_string("tokenizer.ggml.pre", arch == "llama"                      ? "llama-bpe"
                                            : arch == "qwen2" || arch == "qwen3" ? "qwen2"
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
