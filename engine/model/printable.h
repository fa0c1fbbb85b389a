#pragma once

// Internal to engine/model: names read from untrusted files (keys, tensor names, architecture
// strings) go into one-line error messages, so control bytes are escaped and length is capped.
#include <cstdio>
#include <string>
#include <string_view>

namespace tern::engine {

inline std::string printable(std::string_view text, std::size_t max_length = 200) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_length) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace tern::engine
