#pragma once

#include <filesystem>
#include <string>

#include "engine/expected.h"
#include "engine/model/gguf_file.h"
#include "engine/model/random_model_spec.h"

namespace tern::engine {

// The vocabulary a random model takes: ../shared/vocab/ggml-vocab-gpt-2.gguf (under
// $TERN_SHARED_DIR when it is set, else ../shared from the working directory), padded or trimmed
// to the shape's vocabulary; without that file, a byte-level one (256 byte tokens and
// <|endoftext|>), padded. Padding tokens are `[PAD<id>]`, of type unused: byte-level BPE never
// makes them from text.
std::filesystem::path random_model_vocabulary_path();

// Makes the GGUF file `spec` names in anonymous memory and parses it as GgufFile::open parses a
// file, so the model is exactly what a file of the same bytes would give. llama.cpp's tensor
// names and layouts (`llama`, with `ffn_*_exps` for experts; `deepseek2` for latent attention);
// matrices and the embedding in spec.type, norms F32, a router and selection bias F32. The same
// spec (and vocabulary file) gives the same bytes on any machine and thread count: every 8-byte
// word of random bits comes from a counter-based generator keyed by the seed, the tensor's name
// and the word's index. Quantized blocks are random bytes with a scale of random sign; float
// weights are uniform; both have a standard deviation of 0.02, so the forward pass stays finite
// over any depth. Fails with a clear error before allocating when the model would not fit in the
// machine's available memory.
Expected<GgufFile> make_random_model_gguf(const RandomModelSpec& spec);

// The vocabulary part alone, as a vocabulary-only GGUF like ../shared/vocab's: what a random
// model of `vocab_size` tokens takes (tests).
Expected<GgufFile> make_random_model_vocabulary(int vocab_size);

}  // namespace tern::engine
