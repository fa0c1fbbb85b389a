#pragma once

// Text <-> token ids, matching the reference implementations exactly: Hugging Face
// tokenizer.json (as tokenizers / transformers.js encode it) and GGUF vocabularies (as
// llama.cpp encodes them). Encoding and decoding are const and safe to call from many threads.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/tokenizer/piece_token_bound.h"

namespace tern::engine {

class GgufFile;
struct TokenizerParts;

// What Tokenizer::encode_bounded produced.
struct BoundedEncoding {
  // The whole encoding, equal to encode()'s, unless `exceeded`; then the tokens encoded before
  // the stop (at most max_tokens plus one pre-tokenized piece's, or fewer when a piece's length
  // alone proved it too long).
  std::vector<std::int32_t> ids;
  bool exceeded = false;
  // When exceeded: a count the whole encoding is known to reach, more than max_tokens.
  std::size_t tokens_at_least = 0;
};

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
  // encode() that stops as soon as the text is known to need more than `max_tokens` tokens, so
  // the work an over-long text costs is bounded by max_tokens rather than by its length. Pieces
  // are encoded one at a time as the pre-tokenizer finds them, and a piece too long to fit in
  // what is left (PieceTokenBound) is not encoded at all. A text that fits gets exactly
  // encode()'s ids: both are the same loop.
  BoundedEncoding encode_bounded(std::string_view text, bool add_special,
                                 std::size_t max_tokens) const;
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
  PieceTokenBound piece_bound_;  // what encode_bounded knows of a piece before encoding it
};

}  // namespace tern::engine
