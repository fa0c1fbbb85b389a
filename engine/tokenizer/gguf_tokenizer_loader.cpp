// Builds a Tokenizer from a GGUF file's tokenizer.ggml.* metadata, encoding as llama.cpp does:
// "llama" vocabularies with the SPM algorithm, "gpt2" ones with byte-level BPE and the split
// regexes tokenizer.ggml.pre names.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/gguf_pre_tokenizers.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_parts.h"

namespace tern::engine {

namespace {

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

std::optional<std::int32_t> token_id_key(const GgufFile& gguf, std::string_view key,
                                         std::int32_t vocab_size) {
  const auto id = gguf.get_int(key);
  if (!id || *id < 0 || *id >= vocab_size) return std::nullopt;
  return static_cast<std::int32_t>(*id);
}

Status add_bpe_model(const GgufFile& gguf, TokenizerParts& parts) {
  const auto merges_array = gguf.get_array("tokenizer.ggml.merges");
  MergeTable merges;
  if (merges_array) {
    const auto merges_text = merges_array->strings();
    merges.reserve(merges_text.size());
    std::string joined;
    for (std::size_t rank = 0; rank < merges_text.size(); ++rank) {
      const std::string_view merge = merges_text[rank];
      const std::size_t space = merge.find(' ', 1);
      if (space == std::string_view::npos) continue;
      const auto left = parts.vocab.find(merge.substr(0, space));
      const auto right = parts.vocab.find(merge.substr(space + 1));
      joined.assign(merge.substr(0, space));
      joined.append(merge.substr(space + 1));
      const auto merged = parts.vocab.find(joined);
      if (left && right && merged) {
        merges.insert(*left, *right, {static_cast<std::int32_t>(rank), *merged});
      }
    }
  }
  const std::string pre(gguf.get_string("tokenizer.ggml.pre").value_or("default"));
  const GgufPreTokenizer split = gguf_pre_tokenizer(pre);
  if (!split.known) {
    spdlog::warn("{}: tokenizer.ggml.pre '{}' is not known; using llama.cpp's default split",
                 gguf.path(), pre);
  }
  for (const char* pattern : split.regexes) {
    auto regex = Regex::compile(pattern);
    if (!regex) return regex.error();
    parts.pre_tokenizer.add({.kind = PreTokenizerStep::Kind::kSplit,
                             .regex = std::move(regex.value()),
                             .behavior = SplitBehavior::kIsolated});
  }
  BpeOptions options;
  options.byte_level = true;
  options.ignore_merges = split.ignore_merges;
  parts.bpe.emplace(parts.vocab, std::move(merges), options);
  parts.decoder.add_token_step({.kind = DecoderStep::Kind::kByteLevel});
  return {};
}

void add_spm_model(const GgufFile& gguf, TokenizerParts& parts) {
  parts.spm.emplace(parts.vocab, parts.unk_id);
  // llama.cpp hands raw bytes to SPM: invalid UTF-8 becomes byte tokens, not U+FFFD.
  parts.sanitize_input = false;
  const bool add_space_prefix = gguf.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  parts.space_prefix_after_special = add_space_prefix;
  parts.normalizer.add({.kind = NormalizerStep::Kind::kReplace,
                        .text = std::string(kSentencePieceSpace),
                        .pattern = " "});
  parts.decoder.add_token_step({.kind = DecoderStep::Kind::kByteFallback});
  parts.decoder.add_token_step({.kind = DecoderStep::Kind::kReplace,
                                .pattern = std::string(kSentencePieceSpace),
                                .content = " "});
  if (add_space_prefix) parts.decoder.set_strip_leading_spaces(1);
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
  auto fail = [&](std::string_view reason) {
    return Error{fmt::format("{}: tokenizer: {}", gguf.path(), reason)};
  };
  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) return fail("no tokenizer.ggml.model");
  if (*model != "llama" && *model != "gpt2") {
    return fail(fmt::format("tokenizer.ggml.model '{}' is not supported (llama, gpt2)", *model));
  }
  const auto tokens_array = gguf.get_array("tokenizer.ggml.tokens");
  if (!tokens_array || tokens_array->size() == 0) return fail("no tokenizer.ggml.tokens");
  const auto tokens = tokens_array->strings();
  if (tokens.size() != tokens_array->size())
    return fail("tokenizer.ggml.tokens is not a string array");
  std::vector<double> scores;
  if (const auto array = gguf.get_array("tokenizer.ggml.scores")) scores = array->numbers();
  std::vector<std::int64_t> types;
  if (const auto array = gguf.get_array("tokenizer.ggml.token_type")) types = array->integers();

  auto parts = std::make_unique<TokenizerParts>();
  parts->source = gguf.path();
  std::vector<VocabEntry> entries(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto& entry = entries[i];
    entry.text = std::string(tokens[i]);
    const std::int64_t type = i < types.size() ? types[i] : 1;
    entry.kind = type >= 1 && type <= 6 ? static_cast<TokenKind>(type) : TokenKind::kNormal;
    entry.score = i < scores.size() ? static_cast<float>(scores[i]) : 0.0f;
    // llama.cpp's decode with special=false drops control tokens only.
    entry.special = entry.kind == TokenKind::kControl;
  }
  parts->vocab = Vocab(std::move(entries));
  const std::int32_t vocab_size = parts->vocab.size();
  parts->decode_raw.assign(static_cast<std::size_t>(vocab_size), false);
  for (std::int32_t id = 0; id < vocab_size; ++id) {
    const TokenKind kind = parts->vocab.kind(id);
    // Control, user-defined and unknown tokens are matched whole in the text and decode to
    // their own text, as in llama.cpp's tokenizer_st_partition and token_to_piece.
    if (kind == TokenKind::kControl || kind == TokenKind::kUserDefined ||
        kind == TokenKind::kUnknown) {
      parts->decode_raw[static_cast<std::size_t>(id)] = true;
      parts->added_tokens.add({.content = std::string(parts->vocab.text(id)), .id = id});
    }
  }

  parts->unk_id = token_id_key(gguf, "tokenizer.ggml.unknown_token_id", vocab_size);
  parts->bos_id = token_id_key(gguf, "tokenizer.ggml.bos_token_id", vocab_size);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    const auto id = token_id_key(gguf, key, vocab_size);
    if (id &&
        std::find(parts->eos_ids.begin(), parts->eos_ids.end(), *id) == parts->eos_ids.end()) {
      parts->eos_ids.push_back(*id);
    }
  }
  if (const auto chat_template = gguf.get_string("tokenizer.chat_template")) {
    parts->chat_template = std::string(*chat_template);
  }

  const bool spm = *model == "llama";
  if (spm) {
    if (!parts->unk_id) parts->unk_id = parts->vocab.find("<unk>");
    add_spm_model(gguf, *parts);
  } else if (Status status = add_bpe_model(gguf, *parts); !status) {
    return fail(status.message());
  }
  const bool add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  const bool add_eos = gguf.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (add_bos && parts->bos_id) parts->prefix_ids.push_back(*parts->bos_id);
  if (add_eos && !parts->eos_ids.empty()) parts->suffix_ids.push_back(parts->eos_ids.front());
  return std::make_unique<Tokenizer>(std::move(parts));
}

}  // namespace tern::engine
