#pragma once

#include <string>
#include <string_view>

#include "engine/expected.h"

namespace tern::engine {

// The note every surface (startup log, /v1/models) shows for the demo model.
inline constexpr std::string_view kDemoModelNote =
    "demo model: random weights, so its text is random characters (tern make-demo)";

// Writes the demo model: a llama-architecture GGUF of about 4 MB with seeded random F32
// weights and a byte-level vocabulary (256 byte tokens plus <|endoftext|>, <|im_start|> and
// <|im_end|>, with a ChatML template). The same bytes every time. Its output projection leans
// towards printable ASCII through one constant hidden dimension, so the random text at least
// reads as characters.
Status write_demo_model(const std::string& path);

}  // namespace tern::engine
