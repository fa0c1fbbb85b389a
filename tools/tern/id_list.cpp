#include "tools/tern/id_list.h"

#include <charconv>

#include <fmt/format.h>

namespace tern::tools {

Expected<std::vector<std::int32_t>> parse_id_list(std::string_view text, std::int64_t vocab_size) {
  std::vector<std::int32_t> ids;
  std::size_t index = 0;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    std::int64_t value = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size()) {
      return Error{fmt::format("token id #{} '{}' is not an integer", index, item)};
    }
    if (value < 0 || value >= vocab_size) {
      return Error{fmt::format("token id #{} ({}) is outside the vocabulary of {}", index, value,
                               vocab_size)};
    }
    ids.push_back(static_cast<std::int32_t>(value));
    ++index;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return ids;
}

std::string format_id_list(std::span<const std::int32_t> ids) {
  return fmt::format("{}", fmt::join(ids, ","));
}

}  // namespace tern::tools
