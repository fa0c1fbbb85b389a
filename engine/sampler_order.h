#pragma once

#include <cstdint>
#include <utility>

namespace tern::engine {

// The sampler's order of (value, id) candidates: larger first, equal values by lower id. The
// full-row and the candidate paths both sort with it, so that they cut and draw alike.
inline bool ranks_before(const std::pair<float, std::int32_t>& a,
                         const std::pair<float, std::int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace tern::engine
