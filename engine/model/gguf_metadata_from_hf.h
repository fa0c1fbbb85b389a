#pragma once

#include <string>

#include "engine/expected.h"
#include "engine/model/model_config.h"

namespace tern::engine {

class GgufWriter;

// The GGUF metadata of a Hugging Face checkpoint: architecture keys from `config`, and the
// tokenizer (tokenizer.json, tokenizer_config.json) as `tokenizer.ggml.*`. A SentencePiece-style
// BPE (Metaspace or byte fallback) becomes GGUF's `llama` model with scores derived from merge
// ranks; a byte-level BPE becomes `gpt2` with its merges.
Status write_hf_metadata(const ModelConfig& config, const std::string& directory,
                         std::uint32_t file_type, GgufWriter& writer);

}  // namespace tern::engine
