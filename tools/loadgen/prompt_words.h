#pragma once

// Deterministic prompts: request i gets `words` words drawn from a fixed English word list by
// (seed, i), so runs with the same seed send the same text and requests share no prefix.
#include <cstdint>
#include <string>

namespace tern::loadgen {

std::string make_prompt(std::uint64_t seed, std::uint64_t request_index, int words);

}  // namespace tern::loadgen
