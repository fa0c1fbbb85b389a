#include "engine/tokenizer/detokenizer.h"

#include <algorithm>

namespace tern::engine {

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool skip_special, bool continues_text,
                         std::span<const std::int32_t> kept_special)
    : tokenizer_(tokenizer),
      skip_special_(skip_special),
      kept_special_(kept_special),
      assembler_(continues_text ? 0 : tokenizer.strip_leading_spaces()) {}

std::string Detokenizer::push(std::int32_t id) {
  bytes_.clear();
  const bool skip =
      skip_special_ && !std::binary_search(kept_special_.begin(), kept_special_.end(), id);
  tokenizer_.append_token_bytes(id, skip, bytes_);
  std::string text;
  assembler_.append(bytes_, text);
  return text;
}

std::string Detokenizer::flush() {
  std::string text;
  assembler_.finish(text);
  return text;
}

}  // namespace tern::engine
