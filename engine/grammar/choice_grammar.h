#pragma once

#include <memory>
#include <span>
#include <string>

#include "engine/expected.h"
#include "engine/grammar/grammar_builder.h"

namespace tern::engine::grammar {

// The grammar whose sentences are exactly the given strings (vLLM's `choice`): the output is one
// of them, byte for byte. An empty list is an invalid_field error, since nothing could match.
Expected<std::shared_ptr<const Grammar>> compile_choice(std::span<const std::string> choices,
                                                        CompileDeadline deadline = {});

}  // namespace tern::engine::grammar
