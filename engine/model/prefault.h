#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tern::engine {

// Reads every page of the mapped regions once, so the first requests do not stall on page
// faults from a cold disk. Logs bytes and percent at least every 2 s; `label` names the model.
void prefault(std::span<const std::span<const std::byte>> regions, std::string_view label);

// Resident set size of this process (from /proc/self/statm); nullopt where unavailable.
std::optional<std::uint64_t> resident_memory_bytes();

}  // namespace tern::engine
