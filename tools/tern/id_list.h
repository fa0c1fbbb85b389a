#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::tools {

// "1,2,3" <-> ids. Parsing rejects anything but integers in [0, vocab_size), naming the entry.
Expected<std::vector<std::int32_t>> parse_id_list(std::string_view text, std::int64_t vocab_size);
std::string format_id_list(std::span<const std::int32_t> ids);

}  // namespace tern::tools
