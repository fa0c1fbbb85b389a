#pragma once

// Everything a Tokenizer is made of, filled in by the loaders (tokenizer.json or GGUF) and then
// owned by the Tokenizer. Internal to engine/tokenizer/.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/decoder.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/spm_model.h"
#include "engine/tokenizer/vocab.h"

namespace tern::engine {

struct TokenizerParts {
  std::string source;  // the file or directory, for messages
  Vocab vocab;
  std::optional<BpeModel> bpe;  // exactly one of bpe and spm is set
  std::optional<SpmModel> spm;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  AddedTokenMatcher added_tokens;
  std::optional<std::int32_t> unk_id;

  // Invalid UTF-8 becomes U+FFFD before anything sees the text (what tokenizers, behind a
  // Python str, and llama.cpp's BPE path do). llama.cpp's SPM path keeps the raw bytes instead.
  bool sanitize_input = true;
  // llama.cpp SPM: a space goes before the text at the start and after each special token.
  bool space_prefix_after_special = false;
  // transformers' LlamaTokenizer with legacy=false: encode "▁" + text (with "▁" read as a space)
  // and drop that leading "▁" token again when a special token follows it.
  bool llama_non_legacy = false;

  std::vector<bool> decode_raw;          // per id: the text is emitted as is, bypassing the decoder
  std::vector<std::int32_t> prefix_ids;  // add_special
  std::vector<std::int32_t> suffix_ids;
  std::optional<std::int32_t> bos_id;
  std::vector<std::int32_t> eos_ids;
  std::optional<std::string> chat_template;
};

}  // namespace tern::engine
