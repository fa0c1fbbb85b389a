// Builds a Tokenizer from Hugging Face tokenizer.json (+ tokenizer_config.json and
// generation_config.json): BPE models with the normalizers, pre-tokenizers, decoders and
// post-processors that BPE tokenizers ship with.
#include <fmt/format.h>

#include <algorithm>

#include "engine/json_syntax.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_json_components.h"
#include "engine/tokenizer/tokenizer_parts.h"

namespace tern::engine {

namespace {

using json_fields::bool_field;
using json_fields::field;
using json_fields::int_field;
using json_fields::string_field;
using simdjson::dom::element;

Error unsupported(std::string_view what, std::string_view type) {
  return Error{fmt::format("unsupported {} type '{}'", what, type)};
}

std::optional<std::int32_t> token_id(const Vocab& vocab, std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  return vocab.find(*text);
}

// TemplateProcessing / Bert / Roberta post-processors decide what add_special inserts.
Status parse_post_processor(element node, const Vocab& vocab, TokenizerParts& parts,
                            bool& decided) {
  const auto type = string_field(node, "type").value_or("");
  if (type == "Sequence") {
    simdjson::dom::array children;
    if (node["processors"].get_array().get(children) != simdjson::SUCCESS) return {};
    for (element child : children) {
      if (Status status = parse_post_processor(child, vocab, parts, decided); !status) {
        return status;
      }
    }
    return {};
  }
  if (type == "TemplateProcessing") {
    simdjson::dom::array single;
    if (node["single"].get_array().get(single) != simdjson::SUCCESS) return {};
    bool after_sequence = false;
    for (element item : single) {
      if (field(item, "Sequence")) {
        after_sequence = true;
        continue;
      }
      const auto special = field(item, "SpecialToken");
      if (!special) continue;
      const auto name = string_field(*special, "id").value_or("");
      std::vector<std::int32_t> ids;
      simdjson::dom::array listed;
      const auto entry = field(node, "special_tokens");
      const auto token = entry ? field(*entry, name) : std::nullopt;
      if (token && (*token)["ids"].get_array().get(listed) == simdjson::SUCCESS) {
        for (element id : listed) {
          std::int64_t value = 0;
          if (id.get_int64().get(value) == simdjson::SUCCESS)
            ids.push_back(static_cast<std::int32_t>(value));
        }
      } else if (const auto id = vocab.find(name)) {
        ids.push_back(*id);
      }
      auto& target = after_sequence ? parts.suffix_ids : parts.prefix_ids;
      target.insert(target.end(), ids.begin(), ids.end());
    }
    decided = true;
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto pair_id = [&](std::string_view key) -> std::optional<std::int32_t> {
      simdjson::dom::array pair;
      if (node[key].get_array().get(pair) != simdjson::SUCCESS) return std::nullopt;
      std::int64_t id = 0;
      if (pair.at(1).get_int64().get(id) != simdjson::SUCCESS) return std::nullopt;
      return static_cast<std::int32_t>(id);
    };
    if (const auto cls = pair_id("cls")) parts.prefix_ids.push_back(*cls);
    if (const auto sep = pair_id("sep")) parts.suffix_ids.push_back(*sep);
    decided = true;
  }
  return {};
}

struct ModelVocab {
  std::vector<VocabEntry> entries;
};

Expected<ModelVocab> read_vocab(element model, element root) {
  ModelVocab result;
  simdjson::dom::object vocab_object;
  if (model["vocab"].get_object().get(vocab_object) != simdjson::SUCCESS) {
    return Error{"model.vocab is not an object"};
  }
  std::int64_t max_id = -1;
  for (auto [text, value] : vocab_object) {
    std::int64_t id = 0;
    if (value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > (1 << 24)) {
      return Error{fmt::format("model.vocab entry '{}' has no valid id", text)};
    }
    max_id = std::max(max_id, id);
  }
  result.entries.resize(static_cast<std::size_t>(max_id + 1));
  for (auto& entry : result.entries) entry.kind = TokenKind::kUndefined;
  for (auto [text, value] : vocab_object) {
    const auto id = static_cast<std::size_t>(value.get_int64().value_unsafe());
    result.entries[id] = {std::string(text), TokenKind::kNormal, 0.0f, false};
  }

  simdjson::dom::array added;
  if (root["added_tokens"].get_array().get(added) == simdjson::SUCCESS) {
    for (element token : added) {
      const auto id = int_field(token, "id");
      const auto content = string_field(token, "content");
      if (!id || !content || *id < 0 || *id > (1 << 24))
        return Error{"added_tokens entry without id/content"};
      const auto index = static_cast<std::size_t>(*id);
      if (index >= result.entries.size()) {
        const std::size_t old_size = result.entries.size();
        result.entries.resize(index + 1);
        for (std::size_t i = old_size; i < index; ++i)
          result.entries[i].kind = TokenKind::kUndefined;
      }
      const bool special = bool_field(token, "special", false);
      auto& entry = result.entries[index];
      entry.text = std::string(*content);
      entry.kind = special ? TokenKind::kControl : TokenKind::kUserDefined;
      entry.special = special;
    }
  }
  return result;
}

Expected<MergeTable> read_merges(element model, const Vocab& vocab) {
  MergeTable merges;
  simdjson::dom::array list;
  if (model["merges"].get_array().get(list) != simdjson::SUCCESS) return merges;
  merges.reserve(list.size());
  std::int32_t rank = 0;
  for (element merge : list) {
    std::string_view left, right, joined;
    simdjson::dom::array pair;
    if (merge.get_string().get(joined) == simdjson::SUCCESS) {
      const std::size_t space = joined.find(' ', 1);
      if (space == std::string_view::npos)
        return Error{fmt::format("merge '{}' has no space", joined)};
      left = joined.substr(0, space);
      right = joined.substr(space + 1);
    } else if (merge.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2) {
      if (pair.at(0).get_string().get(left) != simdjson::SUCCESS ||
          pair.at(1).get_string().get(right) != simdjson::SUCCESS) {
        return Error{"merge pair is not two strings"};
      }
    } else {
      return Error{"merge is neither \"a b\" nor [\"a\", \"b\"]"};
    }
    const auto left_id = vocab.find(left), right_id = vocab.find(right);
    const auto merged_id = vocab.find(std::string(left) + std::string(right));
    // tokenizers rejects such a file; skipping the rule keeps every other merge usable.
    if (left_id && right_id && merged_id) merges.insert(*left_id, *right_id, {rank, *merged_id});
    ++rank;
  }
  return merges;
}

std::optional<std::string> chat_template_of(element config) {
  const auto value = field(config, "chat_template");
  if (!value) return std::nullopt;
  std::string_view text;
  if (value->get_string().get(text) == simdjson::SUCCESS) return std::string(text);
  simdjson::dom::array named;
  if (value->get_array().get(named) != simdjson::SUCCESS) return std::nullopt;
  std::optional<std::string> first;
  for (element entry : named) {
    const auto name = string_field(entry, "name");
    const auto body = string_field(entry, "template");
    if (!body) continue;
    if (name == "default") return std::string(*body);
    if (!first) first = std::string(*body);
  }
  return first;
}

void read_special_ids(element config, element generation_config, bool has_generation_config,
                      TokenizerParts& parts) {
  const Vocab& vocab = parts.vocab;
  if (const auto bos = field(config, "bos_token"))
    parts.bos_id = token_id(vocab, json_fields::token_string(*bos));
  if (const auto eos = field(config, "eos_token")) {
    if (const auto id = token_id(vocab, json_fields::token_string(*eos)))
      parts.eos_ids.push_back(*id);
  }
  if (has_generation_config) {
    if (const auto eos = field(generation_config, "eos_token_id")) {
      auto add = [&](element value) {
        std::int64_t id = 0;
        if (value.get_int64().get(id) == simdjson::SUCCESS &&
            vocab.contains(static_cast<std::int32_t>(id)) &&
            std::find(parts.eos_ids.begin(), parts.eos_ids.end(), id) == parts.eos_ids.end()) {
          parts.eos_ids.push_back(static_cast<std::int32_t>(id));
        }
      };
      simdjson::dom::array list;
      if (eos->get_array().get(list) == simdjson::SUCCESS) {
        for (element value : list) add(value);
      } else {
        add(*eos);
      }
    }
    if (!parts.bos_id) {
      if (const auto bos = int_field(generation_config, "bos_token_id");
          bos && vocab.contains(static_cast<std::int32_t>(*bos))) {
        parts.bos_id = static_cast<std::int32_t>(*bos);
      }
    }
  }
}

Status build(element root, element config, bool has_config, element generation_config,
             bool has_generation_config, TokenizerParts& parts) {
  const auto model = field(root, "model");
  if (!model) return Error{"no \"model\" object"};
  const auto model_type = string_field(*model, "type").value_or("BPE");
  if (model_type != "BPE") return unsupported("model", model_type);
  if (!string_field(*model, "continuing_subword_prefix").value_or("").empty() ||
      !string_field(*model, "end_of_word_suffix").value_or("").empty()) {
    return Error{"BPE continuing_subword_prefix / end_of_word_suffix are not supported"};
  }

  auto vocab = read_vocab(*model, root);
  if (!vocab) return vocab.error();
  parts.vocab = Vocab(std::move(vocab->entries));
  parts.decode_raw.assign(static_cast<std::size_t>(parts.vocab.size()), false);
  auto merges = read_merges(*model, parts.vocab);
  if (!merges) return merges.error();

  simdjson::dom::array added;
  if (root["added_tokens"].get_array().get(added) == simdjson::SUCCESS) {
    for (element token : added) {
      parts.added_tokens.add({.content = std::string(string_field(token, "content").value_or("")),
                              .id = static_cast<std::int32_t>(int_field(token, "id").value_or(-1)),
                              .lstrip = bool_field(token, "lstrip", false),
                              .rstrip = bool_field(token, "rstrip", false),
                              .single_word = bool_field(token, "single_word", false)});
    }
  }

  BpeOptions options;
  options.byte_fallback = bool_field(*model, "byte_fallback", false);
  options.fuse_unk = bool_field(*model, "fuse_unk", false);
  options.ignore_merges = bool_field(*model, "ignore_merges", false);
  options.unk_id = token_id(parts.vocab, string_field(*model, "unk_token"));
  parts.unk_id = options.unk_id;

  if (const auto normalizer = field(root, "normalizer")) {
    if (Status status = tokenizer_json::parse_normalizer(*normalizer, parts.normalizer); !status)
      return status;
  }
  if (const auto pre_tokenizer = field(root, "pre_tokenizer")) {
    if (Status status = tokenizer_json::parse_pre_tokenizer(*pre_tokenizer, parts.pre_tokenizer,
                                                            options.byte_level);
        !status) {
      return status;
    }
  }
  if (const auto decoder = field(root, "decoder")) {
    bool fused = false;
    if (Status status = tokenizer_json::parse_decoder(*decoder, parts.decoder, fused); !status)
      return status;
  }
  bool decided = false;
  if (const auto post = field(root, "post_processor")) {
    if (Status status = parse_post_processor(*post, parts.vocab, parts, decided); !status)
      return status;
  }

  read_special_ids(config, generation_config, has_generation_config, parts);
  if (has_config) {
    const auto tokenizer_class = string_field(config, "tokenizer_class").value_or("");
    // transformers (slow LlamaTokenizer, and transformers.js for both) re-tokenizes
    // legacy=false Llama tokenizers this way, whatever the normalizer in tokenizer.json says.
    if ((tokenizer_class == "LlamaTokenizer" || tokenizer_class == "LlamaTokenizerFast") &&
        !bool_field(config, "legacy", true)) {
      parts.llama_non_legacy = true;
      parts.normalizer = Normalizer();
      parts.pre_tokenizer = PreTokenizer();
      parts.pre_tokenizer.add({.kind = PreTokenizerStep::Kind::kMetaspace,
                               .prepend_scheme = PrependScheme::kFirst,
                               .split = false});
    }
    parts.chat_template = chat_template_of(config);
    if (!decided) {
      if (bool_field(config, "add_bos_token", false) && parts.bos_id)
        parts.prefix_ids.push_back(*parts.bos_id);
      if (bool_field(config, "add_eos_token", false) && !parts.eos_ids.empty()) {
        parts.suffix_ids.push_back(parts.eos_ids.front());
      }
    }
  }
  if (!parts.bos_id && parts.prefix_ids.size() == 1) parts.bos_id = parts.prefix_ids.front();

  parts.bpe.emplace(parts.vocab, std::move(merges.value()), options);
  return {};
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_json(std::string_view tokenizer_json,
                                                          std::string_view tokenizer_config_json,
                                                          std::string_view generation_config_json,
                                                          const std::string& source_name) {
  auto fail = [&](std::string_view file, std::string_view reason) {
    return Error{fmt::format("{}: {}: {}", source_name, file, reason)};
  };
  simdjson::dom::parser tokenizer_parser, config_parser, generation_parser;
  element root, config, generation_config;
  auto parse = [](simdjson::dom::parser& parser, std::string_view text,
                  simdjson::padded_string& storage, element& out) {
    storage = simdjson::padded_string(text);
    auto error = parser.parse(storage).get(out);
    if (error == simdjson::NUMBER_ERROR) {
      storage = simdjson::padded_string(json_fields::widen_big_integers(text));
      error = parser.parse(storage).get(out);
    }
    return error;
  };
  simdjson::padded_string tokenizer_text, config_text, generation_text;
  if (auto error = parse(tokenizer_parser, tokenizer_json, tokenizer_text, root)) {
    return fail("tokenizer.json",
                describe_json_error(tokenizer_json, simdjson::error_message(error)));
  }
  const bool has_config = !tokenizer_config_json.empty();
  if (has_config) {
    if (auto error = parse(config_parser, tokenizer_config_json, config_text, config)) {
      return fail("tokenizer_config.json",
                  describe_json_error(tokenizer_config_json, simdjson::error_message(error)));
    }
  }
  const bool has_generation_config = !generation_config_json.empty();
  if (has_generation_config) {
    if (auto error =
            parse(generation_parser, generation_config_json, generation_text, generation_config)) {
      return fail("generation_config.json",
                  describe_json_error(generation_config_json, simdjson::error_message(error)));
    }
  }
  auto parts = std::make_unique<TokenizerParts>();
  parts->source = source_name;
  if (Status status = build(root, has_config ? config : root, has_config, generation_config,
                            has_generation_config, *parts);
      !status) {
    return fail("tokenizer.json", status.message());
  }
  return std::make_unique<Tokenizer>(std::move(parts));
}

}  // namespace tern::engine
