#pragma once

// Incremental decoding for streaming: push() returns only complete UTF-8, and the concatenation
// of every push() plus flush() equals Tokenizer::decode() of all the ids.
#include <cstdint>
#include <span>
#include <string>

#include "engine/tokenizer/text_assembler.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::engine {

class Detokenizer {
 public:
  // `continues_text`: the ids follow text already decoded (a prompt), so SentencePiece's rule of
  // dropping the sequence's leading space does not apply to them; " always" after "Mom said"
  // keeps its space, as in the decode of prompt and continuation together.
  // `kept_special` (sorted) are special tokens written even when skip_special is set: the
  // markers an output parser reads (`<|python_tag|>`, `[TOOL_CALLS]`); it must outlive this.
  Detokenizer(const Tokenizer& tokenizer, bool skip_special, bool continues_text = false,
              std::span<const std::int32_t> kept_special = {});

  std::string push(std::int32_t id);
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::span<const std::int32_t> kept_special_;
  TextAssembler assembler_;
  std::string bytes_;
};

}  // namespace tern::engine
