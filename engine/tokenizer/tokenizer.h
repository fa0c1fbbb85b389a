#pragma once

// Text <-> token ids, matching the reference implementations exactly: Hugging Face
// tokenizer.json (as tokenizers / transformers.js encode it) and GGUF vocabularies (as
// llama.cpp encodes them). Encoding and decoding are const and safe to call from many threads.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

class GgufFile;
struct TokenizerParts;

class Tokenizer {
 public:
  // A .gguf file, a Hugging Face model directory, or a directory (or path) holding
  // tokenizer.json, with tokenizer_config.json (and generation_config.json) beside it.
  static Expected<std::unique_ptr<Tokenizer>> load(const std::string& path);
  static Expected<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);
  // tokenizer.json text plus optional tokenizer_config.json / generation_config.json texts.
  static Expected<std::unique_ptr<Tokenizer>> from_json(std::string_view tokenizer_json,
                                                        std::string_view tokenizer_config_json,
                                                        std::string_view generation_config_json,
                                                        const std::string& source_name);

  explicit Tokenizer(std::unique_ptr<TokenizerParts> parts);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: BOS/EOS as the tokenizer's config asks. Special tokens written in the text are
  // matched either way. Invalid UTF-8 never fails: it is handled as the reference does.
  std::vector<std::int32_t> encode(std::string_view text, bool add_special) const;
  // Ids outside the vocabulary are ignored; invalid UTF-8 comes out as U+FFFD.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special) const;

  std::int32_t vocab_size() const;
  std::optional<std::int32_t> bos_id() const;
  std::vector<std::int32_t> eos_ids() const;
  std::string_view token_text(std::int32_t id) const;
  bool is_special(std::int32_t id) const;
  std::optional<std::string> chat_template() const;
  std::optional<std::string> bos_text() const;
  std::optional<std::string> eos_text() const;

  // For Detokenizer: the bytes one token contributes, before UTF-8 assembly.
  void append_token_bytes(std::int32_t id, bool skip_special, std::string& out) const;
  std::size_t strip_leading_spaces() const;

  void set_chat_template(std::string chat_template);

 private:
  std::unique_ptr<TokenizerParts> parts_;
};

}  // namespace tern::engine
