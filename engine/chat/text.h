#pragma once

// Python's str operations on UTF-8 text, as templates use them: lengths, indexing and slicing
// count code points, and stripping and splitting follow str.strip()/str.split(). Case mapping
// covers ASCII only.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine::chat::text {

// Byte offsets where each code point starts, plus the end offset.
std::vector<std::size_t> code_point_offsets(std::string_view s);
std::size_t code_point_count(std::string_view s);
std::vector<std::string> code_points(std::string_view s);

bool is_python_space(char c);
// chars == nullopt strips whitespace; otherwise any of the (byte) characters in chars.
std::string strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right);
// sep == nullopt: split on runs of whitespace, dropping empty ends, as str.split() does.
std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep,
                               long long max_split);
std::vector<std::string> rsplit(std::string_view s, std::optional<std::string_view> sep,
                                long long max_split);
std::vector<std::string> split_lines(std::string_view s);
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                    long long count);
std::size_t count_occurrences(std::string_view s, std::string_view needle);

std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);

}  // namespace tern::engine::chat::text
