#include "engine/tokenizer/detokenizer.h"

namespace tern::engine {

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool skip_special, bool continues_text)
    : tokenizer_(tokenizer),
      skip_special_(skip_special),
      assembler_(continues_text ? 0 : tokenizer.strip_leading_spaces()) {}

std::string Detokenizer::push(std::int32_t id) {
  bytes_.clear();
  tokenizer_.append_token_bytes(id, skip_special_, bytes_);
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
