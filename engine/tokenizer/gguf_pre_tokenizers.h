#pragma once

// The split regexes llama.cpp applies for each GGUF tokenizer.ggml.pre value. Each regex splits
// the pieces left by the previous one, keeping matches and the text between them.
#include <string_view>
#include <vector>

namespace tern::engine {

struct GgufPreTokenizer {
  std::vector<const char*> regexes;
  bool ignore_merges = false;  // a piece that is a whole token skips BPE (Llama 3 family)
  bool known = true;           // false: `pre` was not recognised and the default regexes stand in
};

GgufPreTokenizer gguf_pre_tokenizer(std::string_view pre);

}  // namespace tern::engine
