#pragma once

// Incremental decoding for streaming: push() returns only complete UTF-8, and the concatenation
// of every push() plus flush() equals Tokenizer::decode() of all the ids.
#include <cstdint>
#include <string>

#include "engine/tokenizer/text_assembler.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::engine {

class Detokenizer {
 public:
  Detokenizer(const Tokenizer& tokenizer, bool skip_special);

  std::string push(std::int32_t id);
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  TextAssembler assembler_;
  std::string bytes_;
};

}  // namespace tern::engine
