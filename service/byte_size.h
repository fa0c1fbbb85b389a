#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tern::service {

// A byte count as the config and the flags write it: an integer, or a number with a unit, B,
// KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), such as 512MiB or
// 2GB. nullopt for anything else, a negative amount, or more than fits in 64 bits.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace tern::service
