#pragma once

// Parsers for the tokenizer.json component objects (normalizer, pre_tokenizer, decoder). Each
// rejects a type it does not implement, so an unsupported tokenizer fails to load instead of
// encoding differently from the reference.
#include <simdjson.h>

#include "engine/expected.h"
#include "engine/tokenizer/decoder.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/pre_tokenizer.h"

namespace tern::engine::tokenizer_json {

Status parse_normalizer(simdjson::dom::element node, Normalizer& normalizer);

// byte_level is set when a ByteLevel step is present: the model then spells bytes in the GPT-2
// alphabet instead of the pre-tokenizer rewriting the text.
Status parse_pre_tokenizer(simdjson::dom::element node, PreTokenizer& pre_tokenizer,
                           bool& byte_level);

// `fused`: a Fuse step came before, so a Strip applies to the whole output, not to each token.
Status parse_decoder(simdjson::dom::element node, Decoder& decoder, bool& fused);

}  // namespace tern::engine::tokenizer_json
